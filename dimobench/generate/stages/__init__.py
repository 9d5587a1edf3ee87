"""Generation stages 1-5, one module each, run in order by :mod:`dimobench.generate.pipeline`."""
