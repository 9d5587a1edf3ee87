// dimobench review serve: one item at a time; every label is saved to the annotator's sheet at once.
// Every string from the sheet or the suite goes in through textContent, never as HTML: a question holding
// "<script>" is shown as those characters.
"use strict";

const KEY_LABELS = { a: "ACCEPT", r: "REJECT", u: "UNSCORED", v: "REVISE" };
const KEY_OF = { ACCEPT: "A", REJECT: "R", UNSCORED: "U", REVISE: "V" };
const NOTE_DELAY_MS = 400;

let state = null;      // /api/state: annotator, fields, items and their status
let item = null;       // /api/item/<index> of the item on screen
let row = 0;           // the chosen row: 0-5 the criteria, 6 the verdict
let queue = Promise.resolve();  // saves go one at a time, in the order they were made
let noteTimer = null;
let keys = Promise.resolve();   // key actions, in order (see onKey)

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

async function call(path, body) {
  const opts = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  const resp = await fetch(path, opts);
  const data = await resp.json().catch(() => ({ error: resp.statusText }));
  if (!resp.ok) throw new Error(data.error || resp.statusText);
  return data;
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

function fieldNames() { return state.order; }  // the sheet's column order, not the JSON key order

function buildFields() {
  const box = $("fields");
  fieldNames().forEach((field, i) => {
    const line = el("div", "field");
    line.dataset.field = field;
    line.addEventListener("click", () => chooseRow(i));
    line.append(el("span", "name", `${i + 1} ${field}`));
    const buttons = el("span", "buttons");
    for (const label of state.fields[field]) {
      const b = el("button", "label", null);
      b.type = "button";
      b.dataset.label = label;
      b.append(el("kbd", null, KEY_OF[label]), document.createTextNode(" " + label));
      b.addEventListener("click", (ev) => {
        ev.stopPropagation();
        b.blur();  // else Enter or Space would press it again and clear the label
        chooseRow(i);
        const again = item && item.labels[field] === label;
        setLabel(field, again ? null : label, false);
      });
      buttons.append(b);
    }
    line.append(buttons);
    box.append(line);
  });
}

function buildItemList() {
  const select = $("items");
  select.replaceChildren();
  state.items.forEach((it, i) => {
    const mark = it.status === "done" ? "\u2713" : it.status === "partial" ? "\u00bd" : "\u00b7";
    const opt = el("option", it.status, `${mark} ${i + 1}. ${it.qa_id}`);
    opt.value = String(i);
    select.append(opt);
  });
  $("jump").max = String(state.items.length);
}

function showProgress(labelled, total) {
  $("progress").textContent = `${labelled} of ${total} labelled`;
  $("bar").max = Math.max(total, 1);
  $("bar").value = labelled;
}

function renderTurn(t) {
  const box = el("div", "turn" + (t.evidence ? " evidence" : "") + (t.ask ? " ask" : ""));
  const head = el("div", "turn-head", `t${t.turn} \u00b7 ${t.timestamp}`);
  if (t.evidence) head.append(el("span", "badge", "evidence"));
  if (t.ask) head.append(el("span", "badge ask", "asked after this turn"));
  box.append(head);
  const user = el("p", "pre user");
  user.append(el("b", null, `${t.speaker}: `), document.createTextNode(t.user));
  box.append(user);
  if (t.assistant) {
    const bot = el("p", "pre assistant");
    bot.append(el("b", null, "assistant: "), document.createTextNode(t.assistant));
    box.append(bot);
  }
  return box;
}

function renderDialogue() {
  const box = $("dialogue");
  box.replaceChildren();
  if (!item.dialogue) {  // no --suite: the sheet's own evidence and context cells
    box.append(el("h4", null, "Evidence (from the sheet)"), el("div", "pre sheet-cell", item.info.evidence || "(none)"));
    box.append(el("h4", null, "Context at the ask turn"), el("div", "pre sheet-cell", item.info.context || "(none)"));
    return;
  }
  item.dialogue.forEach((span, i) => {
    if (i > 0) box.append(el("div", "gap", "\u22ef"));
    const part = el("div", "span");
    span.forEach((t) => part.append(renderTurn(t)));
    box.append(part);
  });
}

function renderHistory() {
  const turns = item.trait_history || [];
  $("history-count").textContent = item.trait_history ? String(turns.length) : "needs --suite";
  const box = $("history-turns");
  box.replaceChildren();
  if (!turns.length) box.append(el("p", "hint", item.trait_history ? "none" : "start the server with --suite"));
  turns.forEach((t) => box.append(renderTurn(t)));
}

function renderItem() {
  const info = item.info;
  const meta = $("meta");
  meta.replaceChildren(el("b", null, `Item ${item.index + 1} of ${item.total}`));
  for (const [name, value] of [["qa_id", info.qa_id], ["stratum", info.stratum], ["type", info.qa_type],
    ["phase", info.phase], ["ask turn", info.ask_turn]]) {
    if (value) meta.append(document.createTextNode(` \u00b7 ${name} `), el("code", null, value));
  }
  if (info.calibration) meta.append(el("span", "badge", "calibration"));
  $("question").textContent = info.question;
  $("options").textContent = info.options;
  const keyed = $("keyed");
  keyed.replaceChildren();
  for (const [name, value] of [["gold", info.gold], ["stale option", info.stale_option],
    ["confounder option", info.confounder_option]]) {
    keyed.append(el("dt", null, name), el("dd", "pre", value || "\u2014"));
  }
  renderDialogue();
  renderHistory();
  $("note").value = item.note || "";
  $("jump").value = String(item.index + 1);
  $("items").value = String(item.index);
  renderLabels();
  showProgress(item.labelled, item.total);
}

function renderLabels() {
  document.querySelectorAll("#fields .field").forEach((line, i) => {
    const field = line.dataset.field;
    line.classList.toggle("chosen", i === row);
    line.classList.toggle("set", item.labels[field] !== null);
    line.querySelectorAll("button").forEach((b) => {
      const on = item.labels[field] === b.dataset.label;
      b.classList.toggle("on", on);
      b.setAttribute("aria-pressed", on ? "true" : "false");
    });
  });
}

function chooseRow(i) {
  row = Math.max(0, Math.min(fieldNames().length - 1, i));
  if (item) renderLabels();
}

function markStatus(data) {
  const it = state.items.find((x) => x.qa_id === data.qa_id);
  if (!it) return;
  const given = Object.values(data.labels).filter((v) => v !== null).length;
  it.status = data.done ? "done" : given ? "partial" : "todo";
  const opt = $("items").options[state.items.indexOf(it)];
  const mark = it.status === "done" ? "\u2713" : it.status === "partial" ? "\u00bd" : "\u00b7";
  opt.textContent = `${mark} ${state.items.indexOf(it) + 1}. ${it.qa_id}`;
  opt.className = it.status;
}

function save(field, value) {
  const body = { annotator: state.annotator, qa_id: item.qa_id, field, value };
  $("saved").textContent = "saving\u2026";
  queue = queue.then(() => call("/api/label", body)).then((data) => {
    markStatus(data);
    showProgress(data.labelled, data.total);
    $("saved").textContent = `saved to ${state.sheet}`;
    showError("");
  }).catch((err) => {
    $("saved").textContent = "not saved";
    showError(`not saved: ${err.message}`);
  });
  return queue;
}

function setLabel(field, label, advance) {
  if (!item || !state.fields[field]) return;
  if (label !== null && !state.fields[field].includes(label)) return;  // e.g. REVISE on a criterion
  item.labels[field] = label;
  if (advance) row = Math.min(row + 1, fieldNames().length - 1);
  renderLabels();
  save(field, label);
}

function flushNote() {
  if (noteTimer === null) return queue;
  clearTimeout(noteTimer);
  noteTimer = null;
  return save("note", $("note").value);
}

async function go(index) {
  if (!state || !state.items.length) return;
  const i = Math.max(0, Math.min(state.items.length - 1, index));
  await flushNote();
  await queue;  // the next item's labels are read after every save of this one landed
  try {
    item = await call(`/api/item/${i}`);
  } catch (err) {
    showError(err.message);
    return;
  }
  item.total = item.total || state.items.length;
  row = 0;
  showError("");
  renderItem();
  window.scrollTo(0, 0);
}

function firstUnlabelled() {
  const from = item ? item.index : 0;
  const order = state.items.map((_, i) => (from + 1 + i) % state.items.length);
  const next = order.find((i) => state.items[i].status !== "done");
  return next === undefined ? from : next;
}

function typing(target) {
  return target instanceof HTMLTextAreaElement || target instanceof HTMLInputElement
    || target instanceof HTMLSelectElement;
}

function keyAction(key) {
  const fields = fieldNames();
  if (key >= "1" && key <= String(fields.length)) return () => chooseRow(Number(key) - 1);
  if (key === "ArrowDown") return () => chooseRow(row + 1);
  if (key === "ArrowUp") return () => chooseRow(row - 1);
  if (KEY_LABELS[key]) return () => setLabel(fields[row], KEY_LABELS[key], true);
  if (key === "x" || key === "Backspace" || key === "Delete") return () => setLabel(fields[row], null, false);
  if (key === "n" || key === "ArrowRight") return () => go(item.index + 1);
  if (key === "p" || key === "ArrowLeft") return () => go(item.index - 1);
  if (key === "f") return () => queue.then(() => go(firstUnlabelled()));  // once pending saves marked their items
  if (key === "g") return () => { $("jump").focus(); $("jump").select(); };
  if (key === "c") return () => $("note").focus();
  if (key === "h") return () => { $("history").open = !$("history").open; };
  return null;
}

function onKey(ev) {
  if (!item || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (typing(ev.target)) {
    if (ev.key === "Escape") ev.target.blur();
    return;
  }
  const action = keyAction(ev.key.length === 1 ? ev.key.toLowerCase() : ev.key);
  if (!action) return;
  ev.preventDefault();
  // keys act in the order typed: one pressed while the next item loads labels that item, not the last one
  keys = keys.then(action).catch((err) => showError(err.message));
}

async function start() {
  try {
    state = await call("/api/state");
  } catch (err) {
    showError(`cannot load the sheet: ${err.message}`);
    return;
  }
  $("annotator").textContent = state.annotator;
  $("sheet").textContent = state.sheet;
  $("sample").textContent = state.sample_id;
  buildFields();
  buildItemList();
  showProgress(state.labelled, state.total);
  document.addEventListener("keydown", onKey);
  $("note").addEventListener("input", () => {
    if (noteTimer !== null) clearTimeout(noteTimer);
    noteTimer = setTimeout(() => { noteTimer = null; save("note", $("note").value); }, NOTE_DELAY_MS);
  });
  $("note").addEventListener("blur", () => { flushNote(); });
  window.addEventListener("pagehide", () => {  // a reload within the typing delay still saves the note
    if (noteTimer === null || !item) return;
    clearTimeout(noteTimer);
    noteTimer = null;
    const body = { annotator: state.annotator, qa_id: item.qa_id, field: "note", value: $("note").value };
    fetch("/api/label", { method: "POST", keepalive: true, headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
  });
  $("jump").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); go(Number($("jump").value) - 1); $("jump").blur(); }
  });
  $("items").addEventListener("change", () => { go(Number($("items").value)); $("items").blur(); });
  $("prev").addEventListener("click", () => go(item.index - 1));
  $("next").addEventListener("click", () => go(item.index + 1));
  $("first").addEventListener("click", () => queue.then(() => go(firstUnlabelled())));
  if (!state.items.length) { showError("the sheet has no items"); return; }
  // a reload resumes where the work is: the first item not yet fully labelled
  await go(state.first_unlabelled === null ? 0 : state.first_unlabelled);
  document.body.dataset.ready = "1";
}

start();
