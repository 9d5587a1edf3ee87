"""dimobench/suite"""
