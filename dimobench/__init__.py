"""dimobench: build, verify and run drift benchmarks for long-term dialogue memory."""

__version__ = "0.1.0"
