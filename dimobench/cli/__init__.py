"""dimobench/cli"""
