// report.html's script: builds the chart, the tables, the question table and the drill-down from the JSON in
// #report-data. Every suite string reaches the page through textContent or setAttribute, never innerHTML, so a
// question holding markup stays text.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var T = data.texts;
  var NS = "http://www.w3.org/2000/svg";
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                "#bcbd22", "#17becf"];
  var PAGE = 500;
  var systems = data.systems;
  var color = {}, label = {};
  systems.forEach(function (s, i) {
    color[s.key] = COLORS[i % COLORS.length];
    label[s.key] = s.run ? s.name + " (" + s.run + ")" : s.name;
  });
  var hidden = {};

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function sv(tag, attrs) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }
  function letter(i) { return i === null || i === undefined ? "-" : (i < 26 ? String.fromCharCode(65 + i) : String(i + 1)); }
  function pct(v) { return v === null || v === undefined ? "-" : (100 * v).toFixed(1) + "%"; }
  function byId(id) { return document.getElementById(id); }
  function option(select, value, text) { select.appendChild(el("option", {value: value}, text)); }

  // ---- header
  byId("intro").textContent = data.intro || "";
  data.runs.forEach(function (r) {
    if (r.label) byId("runs").appendChild(el("li", {}, r.label + ": " + r.source));
  });

  // ---- chart
  var suiteKeys = Object.keys(data.suites);
  var suite = suiteKeys[0];
  if (suiteKeys.length > 1) {
    byId("suite-pick").hidden = false;
    suiteKeys.forEach(function (k) { option(byId("suite-select"), k, k); });
    byId("suite-select").addEventListener("change", function (ev) { suite = ev.target.value; drawChart(); });
  }

  function applyHidden() {
    document.querySelectorAll("#chart [data-system]").forEach(function (g) {
      g.style.display = hidden[g.getAttribute("data-system")] ? "none" : "";
    });
    document.querySelectorAll("#legend .legend-item").forEach(function (item) {
      item.classList.toggle("off", !!hidden[item.getAttribute("data-system")]);
    });
  }

  systems.forEach(function (s) {
    var item = el("label", {"class": "legend-item", "data-system": s.key});
    var box = el("input", {type: "checkbox", "data-system": s.key});
    box.checked = true;
    box.addEventListener("change", function () { hidden[s.key] = !box.checked; applyHidden(); });
    var sw = el("span", {"class": "swatch"});
    sw.style.background = color[s.key];
    item.appendChild(box); item.appendChild(sw); item.appendChild(el("span", {}, label[s.key]));
    byId("legend").appendChild(item);
  });

  function drawChart() {
    var box = byId("chart");
    box.replaceChildren();
    var s = data.suites[suite];
    if (!s || !s.turns) { box.textContent = "No accuracy windows in this report."; return; }
    var W = 1000, H = 330, L = 46, R = 14, TOP = 10, B = 38;
    var x = function (t) { return L + (t / s.turns) * (W - L - R); };
    var y = function (v) { return TOP + (1 - v) * (H - TOP - B); };
    var root = sv("svg", {viewBox: "0 0 " + W + " " + H, "class": "chart", role: "img",
                          "aria-label": "Accuracy over turns, " + suite});
    [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
      root.appendChild(sv("line", {"class": "grid", x1: L, x2: W - R, y1: y(v), y2: y(v)}));
      var t = sv("text", {x: L - 6, y: y(v) + 4, "text-anchor": "end"});
      t.textContent = (100 * v).toFixed(0) + "%";
      root.appendChild(t);
    });
    var step = Math.pow(10, Math.floor(Math.log10(Math.max(s.turns / 8, 1))));
    while (s.turns / step > 10) step *= 2;
    for (var tk = 0; tk <= s.turns; tk += step) {
      var tx = sv("text", {x: x(tk), y: H - B + 16, "text-anchor": "middle"});
      tx.textContent = String(tk);
      root.appendChild(tx);
    }
    var xl = sv("text", {x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle"});
    xl.textContent = "turn";
    root.appendChild(xl);
    root.appendChild(sv("line", {"class": "axis", x1: L, x2: W - R, y1: y(0), y2: y(0)}));
    root.appendChild(sv("line", {"class": "axis", x1: L, x2: L, y1: y(0), y2: y(1)}));
    s.change_points.forEach(function (cp) {
      var line = sv("line", {"class": "change-point", x1: x(cp.turn), x2: x(cp.turn), y1: y(0), y2: y(1)});
      var tt = sv("title", {});
      tt.textContent = "change point: " + cp.persona_id + " " + cp.trait_id + " at turn " + cp.turn;
      line.appendChild(tt);
      root.appendChild(line);
    });
    var shown = systems.filter(function (sy) { return (s.curves[sy.key] || []).length; });
    shown.forEach(function (sy) {
      var pts = s.curves[sy.key];
      var g = sv("g", {"class": "series", "data-system": sy.key});
      var d = pts.map(function (p, i) { return (i ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1); });
      g.appendChild(sv("path", {"class": "curve", "data-system": sy.key, d: d.join(""), stroke: color[sy.key]}));
      pts.forEach(function (p) {
        g.appendChild(sv("circle", {"class": "dot", cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 2.5,
                                    fill: color[sy.key]}));
      });
      root.appendChild(g);
    });
    var guide = sv("line", {"class": "guide", y1: y(0), y2: y(1), visibility: "hidden"});
    root.appendChild(guide);
    var hit = sv("rect", {x: L, y: TOP, width: W - L - R, height: H - TOP - B, fill: "transparent"});
    root.appendChild(hit);
    var tip = byId("tooltip");
    hit.addEventListener("mousemove", function (ev) {
      var r = root.getBoundingClientRect();
      var turn = ((ev.clientX - r.left) * W / r.width - L) / (W - L - R) * s.turns;
      var best = null;
      shown.forEach(function (sy) {
        if (hidden[sy.key]) return;
        s.curves[sy.key].forEach(function (p) { if (best === null || Math.abs(p[0] - turn) < Math.abs(best - turn)) best = p[0]; });
      });
      if (best === null) { tip.hidden = true; return; }
      guide.setAttribute("x1", x(best)); guide.setAttribute("x2", x(best)); guide.setAttribute("visibility", "visible");
      tip.replaceChildren(el("strong", {}, "turns around " + best));
      shown.forEach(function (sy) {
        if (hidden[sy.key]) return;
        var p = s.curves[sy.key].filter(function (q) { return q[0] === best; })[0];
        if (!p) return;
        var row = el("div", {"data-system": sy.key});
        var sw = el("span", {"class": "swatch"});
        sw.style.background = color[sy.key];
        row.appendChild(sw);
        row.appendChild(el("span", {}, label[sy.key] + ": " + pct(p[1]) + " (n=" + p[2] + ")"));
        tip.appendChild(row);
      });
      tip.hidden = false;
      var left = (x(best) * r.width / W) + 12;
      tip.style.left = (left + tip.offsetWidth > r.width ? left - tip.offsetWidth - 24 : left) + "px";
      tip.style.top = "10px";
    });
    hit.addEventListener("mouseleave", function () { tip.hidden = true; guide.setAttribute("visibility", "hidden"); });
    box.appendChild(root);
    applyHidden();
  }
  drawChart();

  // ---- tables (those of report.md)
  data.tables.forEach(function (t) {
    var box = byId("tables").appendChild(el("div", {"class": "table-block"}));
    box.appendChild(el("h3", {}, t.title));
    var table = el("table", {"class": "figures"});
    var head = el("tr");
    t.columns.forEach(function (c) { head.appendChild(el("th", {}, c)); });
    table.appendChild(el("thead")).appendChild(head);
    var body = table.appendChild(el("tbody"));
    t.rows.forEach(function (r) {
      var tr = el("tr");
      r.forEach(function (c) { tr.appendChild(el("td", {}, c)); });
      body.appendChild(tr);
    });
    box.appendChild(table);
    if (t.note) box.appendChild(el("p", {"class": "note"}, t.note));
  });

  // ---- question table
  var Q = data.questions, A = data.answers;
  function distinct(field) {
    var seen = {};
    Q.forEach(function (q) { if (q[field] !== null && q[field] !== undefined) seen[q[field]] = true; });
    return Object.keys(seen).sort();
  }
  systems.forEach(function (s) { option(byId("f-system"), s.key, label[s.key]); });
  distinct("ty").forEach(function (v) { option(byId("f-type"), v, v); });
  distinct("ph").forEach(function (v) { option(byId("f-phase"), v, v); });
  if (suiteKeys.length > 1 || distinct("s").length > 1) {
    byId("f-suite-label").hidden = false;
    distinct("s").forEach(function (v) { option(byId("f-suite"), v, v); });
  }

  function outcome(q, a, want) {
    if (!a) return false;
    if (want === "") return true;
    if (want === "correct") return a[1] === 1;
    if (want === "incorrect") return a[1] === 0;
    if (want === "unscored") return a[1] === null;
    if (want === "stale") return q.st !== null && q.st !== undefined && a[0] === q.st;
    if (want === "confounder") return q.cf !== null && q.cf !== undefined && a[0] === q.cf;
    return false;
  }

  var head = el("tr");
  ["id", "persona", "turn", "type", "phase", "question"].forEach(function (c) { head.appendChild(el("th", {}, c)); });
  systems.forEach(function (s) {
    var th = el("th", {"data-system": s.key}, label[s.key]);
    th.style.borderBottom = "3px solid " + color[s.key];
    head.appendChild(th);
  });
  byId("questions").querySelector("thead").appendChild(head);

  var matches = [], shownRows = 0, selected = null;
  function filter() {
    var sys = byId("f-system").value, want = byId("f-outcome").value, ty = byId("f-type").value;
    var ph = byId("f-phase").value, su = byId("f-suite").value, text = byId("f-text").value.toLowerCase();
    var keys = sys ? [sys] : systems.map(function (s) { return s.key; });
    matches = [];
    for (var i = 0; i < Q.length; i++) {
      var q = Q[i];
      if ((ty && q.ty !== ty) || (ph && q.ph !== ph) || (su && q.s !== su)) continue;
      if (text && T[q.q].toLowerCase().indexOf(text) < 0) continue;
      if (!keys.some(function (k) { return outcome(q, A[k] && A[k][i], want); })) continue;
      matches.push(i);
    }
    byId("q-count").textContent = matches.length + " of " + Q.length + " questions";
    byId("questions").querySelector("tbody").replaceChildren();
    shownRows = 0;
    more();
  }
  function more() {
    var body = byId("questions").querySelector("tbody");
    var frag = document.createDocumentFragment();
    var end = Math.min(matches.length, shownRows + PAGE);
    for (var j = shownRows; j < end; j++) {
      var i = matches[j], q = Q[i];
      var tr = el("tr", {"data-index": i});
      if (i === selected) tr.className = "selected";
      tr.appendChild(el("td", {}, q.id));
      tr.appendChild(el("td", {}, q.p));
      tr.appendChild(el("td", {}, q.t));
      tr.appendChild(el("td", {}, q.ty));
      tr.appendChild(el("td", {}, q.ph));
      tr.appendChild(el("td", {"class": "q", title: T[q.q]}, T[q.q]));
      systems.forEach(function (s) {
        var a = A[s.key] && A[s.key][i];
        var cls = !a ? "na" : a[1] === 1 ? "ok" : a[1] === 0 ? "bad" : "na";
        var mark = !a ? "" : a[1] === 1 ? "\u2713 " : a[1] === 0 ? "\u2717 " : "";
        tr.appendChild(el("td", {"class": cls, "data-system": s.key}, a ? mark + letter(a[0]) : ""));
      });
      frag.appendChild(tr);
    }
    body.appendChild(frag);
    shownRows = end;
    var btn = byId("q-more");
    btn.hidden = shownRows >= matches.length;
    btn.textContent = "Show " + Math.min(PAGE, matches.length - shownRows) + " more (" + (matches.length - shownRows) + " left)";
  }
  byId("q-more").addEventListener("click", more);
  ["f-system", "f-outcome", "f-type", "f-phase", "f-suite"].forEach(function (id) { byId(id).addEventListener("change", filter); });
  byId("f-text").addEventListener("input", filter);
  byId("questions").querySelector("tbody").addEventListener("click", function (ev) {
    var tr = ev.target.closest("tr");
    if (tr) show(Number(tr.getAttribute("data-index")));
  });

  // ---- drill-down: options, gold, every system's choice, and two systems' recalled items side by side
  // start with the first two systems that recall anything: a side of "recalled nothing" shows little
  var recalling = systems.filter(function (s) {
    return (A[s.key] || []).some(function (a) { return a && a[2].length; });
  }).map(function (s) { return s.key; });
  var keys = recalling.concat(systems.map(function (s) { return s.key; }).filter(function (k) { return recalling.indexOf(k) < 0; }));
  var left = keys.length ? keys[0] : "", right = keys.length > 1 ? keys[1] : left;
  systems.forEach(function (s) { option(byId("d-left"), s.key, label[s.key]); option(byId("d-right"), s.key, label[s.key]); });
  byId("d-left").value = left; byId("d-right").value = right;
  byId("d-left").addEventListener("change", function (ev) { left = ev.target.value; if (selected !== null) side(selected); });
  byId("d-right").addEventListener("change", function (ev) { right = ev.target.value; if (selected !== null) side(selected); });

  function show(i) {
    selected = i;
    document.querySelectorAll("#questions tbody tr").forEach(function (tr) {
      tr.classList.toggle("selected", Number(tr.getAttribute("data-index")) === i);
    });
    var q = Q[i];
    byId("detail").hidden = false;
    byId("d-id").textContent = q.id;
    byId("d-question").textContent = T[q.q];
    byId("d-meta").textContent = [q.s, q.p, "asked at turn " + q.t, q.ty, q.ph, q.tr,
      q.ev.length ? "evidence turns " + q.ev.join(", ") : ""].filter(Boolean).join(" \u00b7 ");
    var ol = byId("d-options");
    ol.replaceChildren();
    q.o.forEach(function (t, k) {
      var li = el("li", {"data-option": k});
      li.appendChild(el("span", {}, T[t]));
      if (k === q.g) li.appendChild(el("span", {"class": "badge gold"}, "gold"));
      if (k === q.st) li.appendChild(el("span", {"class": "badge stale"}, "stale"));
      if (k === q.cf) li.appendChild(el("span", {"class": "badge confounder"}, "confounder"));
      systems.forEach(function (s) {
        var a = A[s.key] && A[s.key][i];
        if (a && a[0] === k) {
          var b = el("span", {"class": "badge pick", "data-system": s.key}, label[s.key]);
          b.style.borderColor = color[s.key];
          li.appendChild(b);
        }
      });
      ol.appendChild(li);
    });
    if (!q.o.length) ol.appendChild(el("li", {}, "(free-text question: no options)"));
    side(i);
    byId("detail").scrollIntoView({block: "nearest"});
  }

  function column(i, key) {
    var q = Q[i], a = A[key] && A[key][i];
    var col = el("div", {"class": "recall-col", "data-system": key});
    var h = col.appendChild(el("h3", {}, label[key]));
    h.style.borderLeft = "4px solid " + color[key];
    h.style.paddingLeft = "6px";
    if (!a) { col.appendChild(el("p", {"class": "hint"}, "not answered by this system")); return col; }
    var verdict = a[1] === 1 ? "correct" : a[1] === 0 ? "incorrect" : "unscored";
    var picked = a[0] === null || a[0] === undefined ? "no option" : letter(a[0]) + ": " + T[q.o[a[0]]];
    col.appendChild(el("p", {"class": "choice " + (a[1] === 1 ? "ok" : a[1] === 0 ? "bad" : "")},
                        "chose " + picked + " (" + verdict + ")"));
    var extra = a[3] || {};
    Object.keys(extra).forEach(function (k) { col.appendChild(el("p", {"class": "extra"}, k + ": " + T[extra[k]])); });
    var items = a[2], ol = el("ol", {"class": "recalled"});
    for (var j = 0; j < items.length; j += 3) {
      var turns = items[j + 2];
      var hitEv = turns.some(function (t) { return q.ev.indexOf(t) >= 0; });
      var li = el("li", {"class": hitEv ? "evidence" : ""});
      li.appendChild(el("span", {"class": "score"}, items[j + 1] === null ? "-" : items[j + 1].toFixed(3)));
      if (turns.length) li.appendChild(el("span", {"class": "turns"}, "turn " + turns.join(", ")));
      li.appendChild(el("span", {"class": "text"}, T[items[j]]));
      ol.appendChild(li);
    }
    if (!items.length) col.appendChild(el("p", {"class": "hint"}, "recalled nothing"));
    col.appendChild(ol);
    return col;
  }
  function side(i) { byId("d-side").replaceChildren(column(i, left), column(i, right)); }

  // ---- configuration of each run
  data.runs.forEach(function (r) {
    if (r.label) byId("config").appendChild(el("h3", {}, "Run " + r.label));
    byId("config").appendChild(el("pre", {}, JSON.stringify(r.config, null, 2)));
  });

  filter();
  document.body.setAttribute("data-ready", "1");
})();
