"""dimobench/generate"""
