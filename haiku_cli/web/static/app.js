// haiku serve: one conversation over AG-UI. Plain JS, no build step, nothing fetched from elsewhere.
"use strict";

const STORE = "haiku-serve:conversation";
const TOKEN = "haiku-serve:token";
const $ = (id) => document.getElementById(id);

let info = null; // what the server covers: {databases, state_keys, analysis}
let convo = null; // {threadId, messages, state, turns, databases}
let running = null; // {controller, question, answer, tools} while a question streams

// ---- storage: the whole conversation (AG-UI messages and every capability's state) ----

function fresh() {
  return { threadId: uuid(), messages: [], state: {}, turns: [], databases: [] };
}

function load() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORE) || "null");
    if (saved && Array.isArray(saved.messages) && Array.isArray(saved.turns)) return saved;
  } catch (_) { /* unreadable: start again */ }
  return fresh();
}

function save() {
  localStorage.setItem(STORE, JSON.stringify(convo));
}

function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return "10000000-1000-4000-8000-100000000000".replace(/[018]/g, (c) =>
    (c ^ (crypto.getRandomValues(new Uint8Array(1))[0] & (15 >> (c / 4)))).toString(16));
}

// ---- talking to the server ----

function headers(extra) {
  const h = Object.assign({}, extra || {});
  const token = localStorage.getItem(TOKEN);
  if (token) h.Authorization = "Bearer " + token;
  return h;
}

async function getJSON(url) {
  const resp = await fetch(url, { headers: headers() });
  if (resp.status === 401) { askToken(); throw new Error("this server needs its token"); }
  const body = await resp.json();
  if (!resp.ok) throw new Error(body.error || resp.statusText);
  return body;
}

async function getBlobURL(url) {
  const resp = await fetch(url, { headers: headers() });
  if (!resp.ok) throw new Error((await resp.json()).error || resp.statusText);
  return URL.createObjectURL(await resp.blob());
}

// The state sent with a question: the carried state, narrowed to the databases ticked in the picker.
function narrowedState() {
  const state = JSON.parse(JSON.stringify(convo.state || {}));
  const chosen = convo.databases.map((name) =>
    info.databases.find((d) => d.name === name) || { name: name, path: null });
  for (const key of info.state_keys) {
    const part = state[key] && typeof state[key] === "object" ? state[key] : {};
    part.sources = chosen;
    state[key] = part;
  }
  return state;
}

// A small AG-UI client: POST the run input, read server-sent events, hand each event to `onEvent`.
async function runAgent(input, signal, onEvent) {
  const resp = await fetch("/api/agui", {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify(input),
    signal: signal,
  });
  if (resp.status === 401) { askToken(); throw new Error("this server needs its token"); }
  const type = resp.headers.get("content-type") || "";
  if (!type.startsWith("text/event-stream")) {
    let message = resp.statusText;
    try { message = (await resp.json()).error || message; } catch (_) { /* not JSON */ }
    throw new Error(message);
  }
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffered.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end).replace(/^\r?\n\r?\n/, "");
      const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

async function ask(question) {
  const user = { id: uuid(), role: "user", content: question };
  const input = {
    threadId: convo.threadId,
    runId: uuid(),
    state: narrowedState(),
    messages: convo.messages.concat([user]),
    tools: [],
    context: [],
    forwardedProps: {},
  };
  const controller = new AbortController();
  running = { controller: controller, question: question, answer: "", tools: [] };
  const got = { error: null, result: null, messages: null, state: null };
  busy(true);
  render();
  try {
    await runAgent(input, controller.signal, (event) => {
      switch (event.type) {
        case "TEXT_MESSAGE_START": running.answer = ""; break;
        case "TEXT_MESSAGE_CONTENT": running.answer += event.delta; renderPending(); break;
        case "TOOL_CALL_START": running.tools.push(event.toolCallName); renderPending(); break;
        case "CUSTOM": if (event.name === "haiku.citations") got.result = event.value; break;
        case "MESSAGES_SNAPSHOT": got.messages = event.messages; break;
        case "STATE_SNAPSHOT": got.state = event.snapshot; break;
        case "RUN_ERROR": got.error = event.message; break;
        default: break;
      }
    });
    if (!got.error && !(got.result && got.messages && got.state)) got.error = "the answer stopped before it was complete";
  } catch (err) {
    got.error = controller.signal.aborted ? null : String(err.message || err);
  }
  const cancelled = controller.signal.aborted;
  running = null;
  busy(false);
  if (got.error || cancelled) {
    // The conversation stays exactly as it was; the question goes back into the box.
    $("question").value = question;
    status(cancelled ? "Cancelled: the conversation is as it was." : got.error, !cancelled);
  } else {
    convo.turns.push({
      question: question,
      answer: got.result.answer,
      grounded: got.result.grounded,
      citations: got.result.citations,
      quotes: got.result.quotes || [],
      programs: programsOf(got.messages, user.id),
    });
    convo.messages = got.messages;
    convo.state = got.state;
    save();
    status("");
  }
  render();
}

// The programs the answer ran (analysis), with their output, from the messages after the question.
function programsOf(messages, userId) {
  let start = messages.findIndex((m) => m.id === userId);
  if (start < 0) start = messages.map((m) => m.role).lastIndexOf("user");
  const outputs = {};
  for (const m of messages.slice(start)) if (m.role === "tool") outputs[m.toolCallId] = m.content;
  const programs = [];
  for (const m of messages.slice(start)) {
    for (const call of m.toolCalls || []) {
      if (call.function.name !== "execute_code") continue;
      let code = call.function.arguments;
      try { code = JSON.parse(code).code || code; } catch (_) { /* shown as sent */ }
      programs.push({ code: code, output: outputs[call.id] || "" });
    }
  }
  return programs;
}

// ---- rendering ----

const ANSWER = { cites: true }; // in an answer, `[n]` opens citation n

function plural(n, one) {
  return n + " " + one + (n === 1 ? "" : "s");
}

// The first view: what questions are asked over, and a few to start with (a click puts one in the box).
function welcomeView() {
  const w = info.welcome || { databases: [], examples: [] };
  const el = document.createElement("div");
  el.id = "welcome";
  let html = "<h2>Ask about your documents</h2><p>Answers cite the passages they rest on: open a citation " +
    "to read it in its document." + (info.analysis ? " The model may also run Python over the documents." : "") +
    '</p><h3>In scope</h3><ul class="scope">';
  for (const db of w.databases) {
    html += '<li data-database="' + esc(db.name) + '"><strong>' + esc(db.name) + "</strong> " +
      (db.error ? '<span class="bad">cannot be read: ' + esc(db.error) + "</span>"
        : '<span class="counts">' + plural(db.documents || 0, "document") + " · " +
          plural(db.chunks || 0, "passage") + "</span>") + "</li>";
  }
  for (const name of info.not_created || []) {
    html += '<li class="not-created" data-database="' + esc(name) + '"><strong>' + esc(name) +
      '</strong> <span class="counts">nothing added yet: left out until something is</span></li>';
  }
  html += "</ul>";
  if (w.examples.length) {
    html += '<h3>Try</h3><div class="examples">' + w.examples.map((q) =>
      '<button type="button" class="example">' + esc(q) + "</button>").join("") + "</div>";
  }
  el.innerHTML = html;
  el.querySelectorAll("button.example").forEach((b) => b.addEventListener("click", () => {
    $("question").value = b.textContent;
    $("question").focus();
  }));
  return el;
}

function render() {
  const root = $("conversation");
  root.textContent = "";
  convo.turns.forEach((turn, n) => root.appendChild(turnView(turn, n)));
  if (!convo.turns.length && !running && info) root.appendChild(welcomeView());
  if (running) {
    const el = document.createElement("div");
    el.className = "turn";
    el.innerHTML = '<div class="question">' + esc(running.question) + '</div><div class="answer pending" id="pending"></div>';
    root.appendChild(el);
    renderPending();
  }
  root.scrollTop = root.scrollHeight;
  renderPicker();
}

function renderPending() {
  const el = $("pending");
  if (!el || !running) return;
  el.innerHTML = running.answer ? markdown(running.answer, ANSWER)
    : '<p class="ungrounded">' + esc(running.tools.length ? "working: " + running.tools.join(", ") + "…" : "thinking…") + "</p>";
}

function turnView(turn, n) {
  const el = document.createElement("div");
  el.className = "turn";
  el.dataset.turn = String(n);
  let html = '<div class="question">' + esc(turn.question) + "</div>";
  html += '<div class="answer">' + markdown(turn.answer, ANSWER) + "</div>";
  // The answer streamed as it was written, so a quote its cited passages do not hold is flagged here.
  for (const q of (turn.quotes || []).filter((x) => !x.verified)) {
    html += '<p class="unverified">Not found in the cited passages: \u201c' + esc(q.text) + "\u201d</p>";
  }
  for (const p of turn.programs || []) {
    html += '<details class="program"><summary>program run</summary><pre><code>' + esc(p.code) +
      "</code></pre>" + (p.output ? "<pre>" + esc(p.output) + "</pre>" : "") + "</details>";
  }
  if (turn.citations && turn.citations.length) {
    html += '<ol class="citations">';
    for (const c of turn.citations) {
      html += '<li><button type="button" data-index="' + c.index + '">[' + c.index + "] " +
        esc(c.document_title || c.document_uri || c.document_id) + '</button><span class="db">' +
        esc(c.database) + "</span></li>";
    }
    html += "</ol>";
  } else if (turn.grounded === false) {
    html += '<p class="ungrounded">Nothing in the documents was cited for this answer.</p>';
  }
  el.innerHTML = html;
  const open = (index) => {
    const c = (turn.citations || []).find((x) => x.index === index);
    if (c) openCitation(c);
  };
  el.querySelectorAll(".citations button").forEach((b) =>
    b.addEventListener("click", () => open(Number(b.dataset.index))));
  el.querySelectorAll("a.cite").forEach((a) =>
    a.addEventListener("click", () => open(Number(a.dataset.n))));
  return el;
}

function renderPicker() {
  const box = $("picker");
  box.querySelectorAll("label").forEach((l) => l.remove());
  if (!info) return;
  for (const db of info.databases) {
    const label = document.createElement("label");
    const box_ = document.createElement("input");
    box_.type = "checkbox";
    box_.value = db.name;
    box_.checked = convo.databases.length === 0 || convo.databases.includes(db.name);
    box_.disabled = Boolean(running);
    box_.addEventListener("change", pickerChanged);
    label.appendChild(box_);
    label.appendChild(document.createTextNode(" " + db.name));
    box.appendChild(label);
  }
}

function pickerChanged() {
  const ticked = Array.from($("picker").querySelectorAll("input:checked")).map((i) => i.value);
  // All (or none) ticked: the whole of the server's databases.
  convo.databases = ticked.length === info.databases.length ? [] : ticked;
  save();
  renderPicker();
}

// A document as its chunks, each rendered as Markdown under the headings it sits in (a chunk's text
// leaves them out: they are in its heading path), the cited one highlighted.
function documentView(doc, citedId) {
  const title = doc.document.title || "";
  let path = [];
  let html = "";
  for (const chunk of doc.chunks) {
    const headings = chunk.heading_path || [];
    let same = 0;
    while (same < headings.length && same < path.length && headings[same] === path[same]) same += 1;
    for (let depth = same; depth < headings.length; depth++) {
      if (depth === 0 && headings[0] === title) continue; // the pane's own heading already says it
      const level = Math.min(depth + 3, 6);
      html += '<h' + level + ' class="heading">' + inline(headings[depth]) + "</h" + level + ">";
    }
    path = headings;
    html += '<div class="chunk' + (chunk.id === citedId ? " cited" : "") + '" data-chunk="' +
      esc(chunk.id) + '">' + markdown(chunk.text) + "</div>";
  }
  return html;
}

// A citation opens its document at the cited passage, with the pictures that passage covers.
async function openCitation(c) {
  const reader = $("reader");
  const body = $("reader-body");
  reader.hidden = false;
  body.innerHTML = "<p>Loading…</p>";
  try {
    const q = "database=" + encodeURIComponent(c.database) + "&document=" + encodeURIComponent(c.document_id);
    const doc = await getJSON("/api/document?" + q);
    let html = "<h2>" + esc(doc.document.title || doc.document.uri || doc.document.id) +
      ' <span class="db">' + esc(doc.database) + "</span></h2>";
    if (doc.document.uri) html += '<p class="ungrounded">' + esc(doc.document.uri) + "</p>";
    if (c.pictures && c.pictures.length) {
      html += '<div class="pictures">';
      for (const p of c.pictures) {
        html += '<figure><img class="pic" data-ref="' + esc(p.reference) + '" alt="' + esc(p.caption) +
          '"><figcaption>' + esc(p.caption || p.reference) + "</figcaption></figure>";
      }
      html += "</div>";
    }
    for (const page of c.pages || []) {
      html += '<figure class="page"><img class="page" data-page="' + Number(page) + '" alt="page ' +
        Number(page) + '"><figcaption>Page ' + Number(page) + ", the passage highlighted</figcaption></figure>";
    }
    html += documentView(doc, c.chunk_id);
    body.innerHTML = html;
    body.querySelectorAll("img.pic").forEach(async (img) => {
      try {
        img.src = await getBlobURL("/api/picture?" + q + "&reference=" + encodeURIComponent(img.dataset.ref));
      } catch (_) { img.replaceWith(document.createTextNode("[picture " + img.dataset.ref + " unavailable]")); }
    });
    body.querySelectorAll("img.page").forEach(async (img) => {
      const where = "database=" + encodeURIComponent(c.database) + "&chunk=" + encodeURIComponent(c.chunk_id);
      try {
        img.src = await getBlobURL("/api/page?" + where + "&page=" + img.dataset.page);
      } catch (_) { img.closest("figure").remove(); } // not a PDF added from a file here: no page to draw
    });
    // The cited passage in view, kept there while the pictures above it load (unless the reader scrolls).
    const cited = body.querySelector(".chunk.cited");
    if (cited) {
      let moved = false;
      const keep = () => { if (!moved) cited.scrollIntoView({ block: "center" }); };
      reader.addEventListener("wheel", () => { moved = true; }, { once: true });
      body.querySelectorAll("img").forEach((img) => img.addEventListener("load", keep, { once: true }));
      keep();
    }
  } catch (err) {
    body.innerHTML = '<p class="ungrounded">' + esc(err.message || err) + "</p>";
  }
}

function status(text, isError) {
  const el = $("status");
  el.textContent = text || "";
  el.className = isError ? "error" : "";
}

function busy(on) {
  $("send").hidden = on;
  $("cancel").hidden = !on;
  $("question").disabled = on;
  $("clear").disabled = on;
}

function askToken() {
  $("login").hidden = false;
  $("token").focus();
}

// ---- start ----

async function start() {
  const fromURL = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (fromURL) {
    localStorage.setItem(TOKEN, decodeURIComponent(fromURL[1]));
    history.replaceState(null, "", location.pathname);
  }
  convo = load();
  render();
  try {
    info = await getJSON("/api/info");
  } catch (err) {
    status(String(err.message || err), true);
    return;
  }
  $("login").hidden = true;
  document.body.dataset.ready = "1";
  render();
}

$("ask").addEventListener("submit", (e) => {
  e.preventDefault();
  const question = $("question").value.trim();
  if (!question || running || !info) return;
  $("question").value = "";
  status("");
  ask(question);
});
$("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("ask").requestSubmit(); }
});
$("cancel").addEventListener("click", () => { if (running) running.controller.abort(); });
$("clear").addEventListener("click", () => {
  const databases = convo.databases;
  convo = fresh();
  convo.databases = databases;
  save();
  status("");
  $("reader").hidden = true;
  render();
});
$("close-reader").addEventListener("click", () => { $("reader").hidden = true; });
$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  localStorage.setItem(TOKEN, $("token").value.trim());
  start();
});

start();
