"""Suite records as Arrow tables with an explicit schema per record file.

The schema comes from the record's pydantic model: nested models become structs, lists become lists, ``Literal``
and ``str`` become strings, integers ``int64``. What the model leaves open is typed from the records themselves,
so nothing is lost and nothing becomes a JSON string while a real type fits:

- extra fields (the format allows them: ``source_id`` of imported turns, ``fixable`` of a criterion) become
  columns after the declared ones, in the order they first appear;
- ``dict[str, X]`` (``profile``, a verdict's ``criteria``) becomes a struct with one field per key seen, since
  ``datasets`` has no map type.

Values whose types disagree across records (``1`` here, ``"one"`` there) fall back to a JSON string column,
marked ``{"dimobench": "json"}`` in its Arrow field metadata. Same records, same schema, same table.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

import pyarrow as pa
from pydantic import BaseModel

JSON_MARK = {b"dimobench": b"json"}
"""Arrow field metadata of a column that holds JSON text because its values have no common type."""


@dataclass(frozen=True)
class Column:
    """The Arrow type of one field and how to turn its JSON value into what ``pyarrow`` takes for that type."""

    type: pa.DataType
    kind: Literal["value", "json", "list", "struct"] = "value"
    item: Column | None = None
    fields: tuple[tuple[str, Column], ...] = ()

    def convert(self, value: Any) -> Any:
        """``value`` (as ``model_dump(mode="json")`` gives it) shaped for this column."""
        if value is None:
            return None
        if self.kind == "json":
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if self.kind == "list":
            assert self.item is not None
            return [self.item.convert(v) for v in value]
        if self.kind == "struct":
            return {name: col.convert(value.get(name)) for name, col in self.fields}
        return value

    def field(self, name: str) -> pa.Field:
        """This column as a named Arrow field (JSON columns carry :data:`JSON_MARK`)."""
        return pa.field(name, self.type, metadata=JSON_MARK if self.kind == "json" else None)


STRING, INT, FLOAT, BOOL = Column(pa.string()), Column(pa.int64()), Column(pa.float64()), Column(pa.bool_())
JSON = Column(pa.string(), "json")


def _list(item: Column) -> Column:
    return Column(pa.list_(item.field("item")), "list", item=item)


def _struct(fields: Sequence[tuple[str, Column]]) -> Column:
    if not fields:  # Parquet cannot store a struct without children
        return JSON
    return Column(pa.struct([col.field(name) for name, col in fields]), "struct", fields=tuple(fields))


def _keys(dicts: Iterable[dict[str, Any]]) -> list[str]:
    """Every key of ``dicts`` in the order it first appears."""
    return list(dict.fromkeys(k for d in dicts for k in d))


def infer(values: Sequence[Any]) -> Column:
    """The column for JSON values of no declared type: the narrowest type they all share, else JSON text."""
    vals = [v for v in values if v is not None]
    if not vals:  # only nulls: any type would do; a string column loads everywhere
        return STRING
    if all(isinstance(v, bool) for v in vals):
        return BOOL
    if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        return INT
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
        return FLOAT
    if all(isinstance(v, str) for v in vals):
        return STRING
    if all(isinstance(v, list) for v in vals):
        return _list(infer([x for v in vals for x in v]))
    if all(isinstance(v, dict) for v in vals):
        return _struct([(k, infer([v.get(k) for v in vals])) for k in _keys(vals)])
    return JSON


def model_column(model: type[BaseModel], values: Sequence[dict[str, Any] | None]) -> Column:
    """The struct of ``model``: its declared fields in order, then the extra fields ``values`` hold."""
    rows = [v for v in values if v is not None]
    fields = [(name, annotation_column(info.annotation, [r.get(name) for r in rows]))
              for name, info in model.model_fields.items()]
    extra = [k for k in _keys(rows) if k not in model.model_fields]
    return _struct(fields + [(k, infer([r.get(k) for r in rows])) for k in extra])


def annotation_column(annotation: Any, values: Sequence[Any]) -> Column:
    """The column of a field declared as ``annotation`` holding ``values``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:  # ``Int`` inside ``list[Int]``: the constraint does not change the type
        return annotation_column(args[0], values)
    if origin in (Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        return annotation_column(kept[0], values) if len(kept) == 1 else infer(values)
    if origin is Literal:
        return STRING if all(isinstance(a, str) for a in args) else infer(values)
    if origin is list:
        return _list(annotation_column(args[0], [x for v in values if v is not None for x in v]))
    if origin is dict:
        dicts = [v for v in values if v is not None]
        return _struct([(k, annotation_column(args[1], [d.get(k) for d in dicts])) for k in _keys(dicts)])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_column(annotation, values)
    simple = {str: STRING, bool: BOOL, int: INT, float: FLOAT}
    return simple.get(annotation, infer(values)) if isinstance(annotation, type) else infer(values)


def records_table(model: type[BaseModel], records: Sequence[BaseModel], metadata: dict[str, str]) -> pa.Table:
    """``records`` (all of ``model``) as one table, in their order, with ``metadata`` on its schema."""
    rows = [r.model_dump(mode="json") for r in records]
    top = model_column(model, rows)
    assert top.kind == "struct"  # every record model declares fields
    schema = pa.schema([col.field(name) for name, col in top.fields], metadata=metadata)
    return pa.Table.from_pylist([top.convert(r) for r in rows], schema=schema)


def features(schema: pa.Schema) -> list[dict[str, Any]]:
    """The ``dataset_info.features`` list of a dataset card for ``schema`` (the YAML form ``datasets`` writes)."""
    return [{"name": f.name, **_feature(f.type)} for f in schema]


def _feature(t: pa.DataType) -> dict[str, Any]:
    if pa.types.is_struct(t):
        return {"struct": [{"name": t.field(i).name, **_feature(t.field(i).type)} for i in range(t.num_fields)]}
    if pa.types.is_list(t):
        inner = _feature(t.value_type)
        return {"list": inner.get("dtype") or inner.get("struct") or inner}
    return {"dtype": {"bool": "bool", "double": "float64"}.get(str(t), str(t))}
