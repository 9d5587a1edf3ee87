"""Exports of a suite to formats other tools load: ``hf``, a Hugging Face dataset folder (Parquet and a card).

``pyarrow`` loads with :mod:`dimobench.export.hf`'s writing, not with this package, so importing it stays quick.
"""

from dimobench.export.hf import FORMATS, ConfigInfo, ExportResult, export_suite

__all__ = ["FORMATS", "ConfigInfo", "ExportResult", "export_suite"]
