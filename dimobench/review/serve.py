"""``dimobench review serve``: a local web page on which one annotator fills in their own sheet.

The page shows one item at a time, as the blind sheet shows it, with the dialogue around its evidence from
the suite. Every click or key saves at once into ``sheet_<annotator>.csv`` (see :mod:`.sheetstore`), so the
CSV flow (``review score``, ``adjudicate``, ``merge``) reads the result unchanged.

Safety, because the page runs in a browser that also visits other sites:

- It binds ``127.0.0.1`` by default and then refuses any request from a non-loopback address, and any whose
  ``Host`` is not a loopback name (a DNS-rebinding page cannot reach it). Only an explicit non-loopback
  ``--host`` lifts both.
- Saves are JSON POSTs only, whose ``Origin`` (when sent) must be the page's own: a form on another site can
  neither send ``application/json`` nor pass the check.
- The HTML is a static file; the script puts every suite and sheet string in with ``textContent``, and the
  Content-Security-Policy allows only this server's own script, so a ``<script>`` in a question is shown as
  text.
- The app opens exactly one sheet, chosen at start; no URL names a file, and a request that names another
  annotator is refused.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask, Response, abort, jsonify, request, send_from_directory
from werkzeug.exceptions import HTTPException

from dimobench.errors import ConfigError, DimobenchError
from dimobench.review.itemview import SuiteView
from dimobench.review.sheets import CRITERIA, FIELDS, labels_for, read_sample
from dimobench.review.sheetstore import NOTE, Row, SheetStore, find_sheet

WEB_DIR = Path(__file__).with_name("web")
"""The page's vendored HTML, CSS and script (packaged with the wheel; nothing comes from a CDN)."""
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP address (``127.0.0.0/8``, ``::1``), brackets and zone allowed."""
    name = host.strip().strip("[]").split("%")[0].lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """The name part of a ``Host`` header (``[::1]:8765`` -> ``::1``, ``localhost:80`` -> ``localhost``)."""
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class ReviewApp:
    """What one server serves: the annotator's sheet, the sample id, and (optionally) the suite's dialogue."""

    def __init__(self, sample_dir: Path, annotator: str, suite: Path | None = None) -> None:
        """Open the annotator's sheet in ``sample_dir`` and, given ``suite``, index its dialogue.

        Raises:
            InputError: a missing folder or sheet, a sheet ``review score`` would refuse, a sheet of another
                sample than ``sample.jsonl``, or a suite without the sampled questions.
        """
        self.annotator = annotator
        self.store = SheetStore(find_sheet(sample_dir, annotator))
        rows = self.store.rows()
        self.sample_id = self._sample_id(sample_dir)
        self.suite = SuiteView.load(suite, [r.qa_id for r in rows]) if suite is not None else None

    def _sample_id(self, sample_dir: Path) -> str:
        from dimobench.review.sheets import read_sheet

        sheet = read_sheet(self.store.path)
        if (sample_dir / "sample.jsonl").is_file():
            sample_id, _ = read_sample(sample_dir / "sample.jsonl")
            if sheet.sample_id not in (None, sample_id):
                from dimobench.errors import InputError

                raise InputError(f"sheet is from sample {sheet.sample_id}, not from sample {sample_id} of "
                                 "sample.jsonl beside it", self.store.path, None, "sample_id")
            return sample_id
        return sheet.sample_id or ""

    def state(self) -> dict[str, Any]:
        """The page's start-up data: who, which sample, the label sets, every item's status, where to resume."""
        rows = self.store.rows()
        first = next((i for i, r in enumerate(rows) if not r.done), None)
        return {"annotator": self.annotator, "sheet": self.store.path.name, "sample_id": self.sample_id,
                "criteria": list(CRITERIA), "order": list(FIELDS), "fields": {f: list(labels_for(f)) for f in FIELDS},
                "items": [_status(r) for r in rows], "first_unlabelled": first, **_progress(rows),
                "has_suite": self.suite is not None}

    def item(self, index: int) -> dict[str, Any]:
        """One item as the page shows it (404 when ``index`` is out of range)."""
        rows = self.store.rows()
        if not 0 <= index < len(rows):
            abort(404, f"no item {index + 1} (the sheet has {len(rows)})")
        row = rows[index]
        out = {"index": index, **_labelled(row), "info": row.info, **_progress(rows)}
        if self.suite is not None:
            out["dialogue"] = self.suite.dialogue(row.qa_id)
            out["trait_history"] = self.suite.trait_history(row.qa_id)
        return out

    def save(self, payload: Any) -> dict[str, Any]:
        """Apply one ``{"annotator", "qa_id", "field", "value"}`` save; the item's labels and the progress."""
        if not isinstance(payload, dict):
            abort(400, "expected a JSON object")
        _same_annotator(payload.get("annotator"), self.annotator)
        qa_id, field, value = payload.get("qa_id"), payload.get("field"), payload.get("value")
        if not isinstance(qa_id, str) or not isinstance(field, str) or not isinstance(value, str | None):
            abort(400, "qa_id and field must be strings, value a string or null")
        row = self.store.save(qa_id, field, value)
        return {**_labelled(row), **_progress(self.store.rows())}


def _same_annotator(named: object, annotator: str) -> None:
    if named != annotator:
        abort(403, f"this server edits only the sheet of {annotator!r}"
                   f"{'' if named is None else f', not of {str(named)!r}'}")


def _labelled(row: Row) -> dict[str, Any]:
    return {"qa_id": row.qa_id, "labels": row.labels, "note": row.note, "done": row.done}


def _status(row: Row) -> dict[str, Any]:
    given = sum(v is not None for v in row.labels.values())
    return {"qa_id": row.qa_id, "status": "done" if row.done else "partial" if given else "todo"}


def _progress(rows: list[Row]) -> dict[str, int]:
    return {"labelled": sum(r.done for r in rows), "total": len(rows)}


def create_app(sample_dir: str | Path, annotator: str, suite: str | Path | None = None,
               allow_remote: bool = False) -> Flask:
    """The Flask app serving ``sample_dir/sheet_<annotator>.csv``.

    Args:
        sample_dir: the ``--out`` folder of ``review sample``.
        annotator: whose sheet; the app never opens another.
        suite: the suite the sample was drawn from, for the dialogue around the evidence (without it the page
            shows the sheet's own ``evidence`` and ``context`` cells).
        allow_remote: accept requests from other machines (only for an explicit non-loopback ``--host``).

    Raises:
        InputError: see :class:`ReviewApp`.
    """
    review = ReviewApp(Path(sample_dir), annotator, Path(suite) if suite is not None else None)
    app = Flask(__name__, static_folder=str(WEB_DIR), static_url_path="/static")
    app.config["DIMOBENCH_REVIEW"] = review
    app.json.sort_keys = False  # type: ignore[attr-defined]  # the page shows the fields in sheet order

    @app.before_request
    def _guard() -> None:
        if not allow_remote and not (is_loopback(request.remote_addr or "")
                                     and is_loopback(_host_name(request.host))):
            abort(403, "this review server answers only on this machine (start it with --host to share it)")
        if "annotator" in request.args:
            _same_annotator(request.args["annotator"], annotator)
        if request.method == "POST":
            if not request.is_json:
                abort(415, "saves are JSON")
            origin = request.headers.get("Origin")
            if origin is not None and origin != request.host_url.rstrip("/"):
                abort(403, "a save from another site's page is refused")

    @app.after_request
    def _headers(resp: Response) -> Response:
        resp.headers["Content-Security-Policy"] = CSP
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["Cache-Control"] = "no-store"
        return resp

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> tuple[Response, int]:
        return jsonify(error=exc.description or exc.name), exc.code or 500

    @app.errorhandler(DimobenchError)
    def _input_error(exc: DimobenchError) -> tuple[Response, int]:
        return jsonify(error=str(exc)), 400

    @app.get("/")
    def index() -> Response:
        return send_from_directory(WEB_DIR, "index.html")

    @app.get("/api/state")
    def state() -> Response:
        return jsonify(review.state())

    @app.get("/api/item/<int:index>")
    def item(index: int) -> Response:
        return jsonify(review.item(index))

    @app.post("/api/label")
    def label() -> Response:
        return jsonify(review.save(request.get_json(silent=True)))

    return app


def serve(sample_dir: Path, annotator: str, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          suite: Path | None = None, ready: Callable[[str, ReviewApp], None] | None = None) -> None:
    """Run the app on ``host:port`` until Ctrl+C; ``ready(url, review)`` is called once it listens.

    Raises:
        InputError: see :func:`create_app`.
        ConfigError: the port cannot be bound.
    """
    import socket

    from werkzeug.serving import make_server

    app = create_app(sample_dir, annotator, suite, allow_remote=not is_loopback(host))
    # one line per request would bury the start-up line the annotator needs; errors are still logged
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    try:  # bound here, not by werkzeug, which prints its own lines and calls sys.exit on a busy port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server((host.strip("[]"), port), family=family)
    except (OSError, OverflowError) as exc:  # OverflowError: a port above 65535
        reason = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"cannot listen on {host}:{port}: {reason} (choose another --port or --host)") from None
    with sock:
        server = make_server(host.strip("[]"), port, app, threaded=True, fd=sock.fileno())
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    if ready is not None:
        ready(f"http://{shown}:{server.port}/", app.config["DIMOBENCH_REVIEW"])
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "NOTE", "ReviewApp", "create_app", "is_loopback", "serve"]
