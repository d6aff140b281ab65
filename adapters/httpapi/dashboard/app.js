// Taskloom dashboard: the queue in fair-scheduling order, each task's
// timeline — whose turn each step was, what it thought, the action with
// its parameters, the result and the error — the pause/resume/cancel
// controls, and what a person decides about a task — the answer to its
// question, the tool call it waits to make (approve or deny), another run
// of one that ended — kept live by the /api/events stream. Ended tasks are
// filtered and paged by the list API; /#/tasks/N opens task N; a chart
// draws GET /api/stats. Plain JavaScript, no dependencies.
//
// The stream is read with fetch rather than EventSource, so that the API
// token travels in the Authorization header (EventSource cannot set
// headers, and a token in the URL ends up in logs and history). It
// reconnects with Last-Event-ID, so no change is missed.
"use strict";

const TERMINAL = new Set(["completed", "failed", "stalemate", "canceled"]);
const STATUS_WORD = {
  queued: "Queued", running: "Running", paused: "Paused", waiting: "Waiting",
  completed: "Completed", failed: "Failed", stalemate: "Stalled", canceled: "Canceled",
};
const WAIT_WORD = { answer: "Needs an answer", approval: "Needs approval", subtasks: "Waiting on subtasks" };
const ENDED_SHOWN = 20;    // ended tasks a page
const STEPS_PAGE = 20;     // steps (with results) a read of a task
const RESULT_LINES = 6;    // lines of a result shown before "Show all"
const RESULT_CHARS = 600;  // characters of a result shown before "Show all"
const STATS_EVERY = 30000; // how often the chart is read again
const STATS_SOON = 5000;   // how soon after a change of the queue
const TOKEN_KEY = "taskloom.token";

const state = {
  tasks: new Map(),      // number → task (the API's task object)
  selected: null,        // task number shown in the detail panel
  timeline: [],          // events of the selected task, oldest first
  buffer: null,          // events that arrive while the lists load
  loaded: false,
  lastEventId: null,
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  stream: null,          // AbortController of the running stream
  fetching: new Set(),   // task numbers being fetched
  steps: new Map(),      // stepKey → step of the selected task (with its result, maybe clipped)
  stepsNext: null,       // before= of the selected task's older steps, null when none
  stepsNextCall: 0,      // the before_call= that goes with it
  ended: {               // the ended tasks' page: the list API's filter and cursor
    status: "completed,failed,stalemate,canceled", q: "",
    after: null,         // after= of this page (null: the first)
    back: [],            // after= of the pages before it
    numbers: [], next: null, total: 0, loaded: false,
  },
};

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

// ---------- API ----------

class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path, opts = {}) {
  const headers = { Accept: "application/json" };
  if (state.token) headers.Authorization = "Bearer " + state.token;
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: opts.method || "GET",
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    cache: "no-store",
  });
  let body = null;
  try { body = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) {
    if (res.status === 401) askToken(!!state.token);
    throw new APIError(res.status, (body && body.error) || res.status + " " + res.statusText);
  }
  return body;
}

// ---------- token ----------

function askToken(refused) {
  stopStream();
  const dlg = $("token-dialog");
  $("token-error").hidden = !refused;
  if (!dlg.open) dlg.showModal();
  $("token").focus();
}

$("token-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  state.token = $("token").value.trim();
  try {
    await api("/api/tasks?limit=1");
  } catch (err) {
    if (err.status === 401) { $("token-error").hidden = false; return; }
  }
  sessionStorage.setItem(TOKEN_KEY, state.token);
  $("token-dialog").close();
  startStream();
});

// ---------- event stream ----------

function setConn(s, text) {
  $("conn").dataset.state = s;
  $("conn-text").textContent = text;
}

function stopStream() {
  if (state.stream) state.stream.abort();
  state.stream = null;
}

async function startStream() {
  stopStream();
  const ctl = new AbortController();
  state.stream = ctl;
  let delay = 1000;
  while (!ctl.signal.aborted) {
    try {
      const headers = { Accept: "text/event-stream" };
      if (state.token) headers.Authorization = "Bearer " + state.token;
      if (state.lastEventId !== null) headers["Last-Event-ID"] = state.lastEventId;
      const res = await fetch("/api/events", { headers, signal: ctl.signal, cache: "no-store" });
      if (res.status === 401) { askToken(!!state.token); return; }
      if (!res.ok || !res.body) throw new Error("stream: " + res.status);
      setConn("live", "Live");
      delay = 1000;
      await readStream(res.body, ctl.signal);
    } catch (err) {
      if (ctl.signal.aborted) return;
    }
    setConn("down", "Reconnecting…");
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 15000);
  }
}

// readStream parses Server-Sent Events (text/event-stream) from a fetch body.
async function readStream(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  signal.addEventListener("abort", () => reader.cancel().catch(() => {}));
  let buf = "";
  let ev = { id: null, type: "message", data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (ev.id !== null) state.lastEventId = ev.id;
        if (ev.data.length) dispatch(ev.type, ev.data.join("\n"));
        ev = { id: null, type: "message", data: [] };
        continue;
      }
      if (line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const field = i < 0 ? line : line.slice(0, i);
      let val = i < 0 ? "" : line.slice(i + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "id") ev.id = val;
      else if (field === "event") ev.type = val;
      else if (field === "data") ev.data.push(val);
    }
  }
}

function dispatch(type, data) {
  let msg;
  try { msg = JSON.parse(data); } catch (_) { return; }
  if (type === "ready") {
    if (!state.loaded) loadAll();
    return;
  }
  if (state.buffer) { state.buffer.push(msg); return; }
  applyEvent(msg);
}

// ---------- state ----------

const ZERO_TIME = /^0001-01-01T/;

function norm(v) {
  return typeof v === "string" && ZERO_TIME.test(v) ? null : v;
}

async function loadAll() {
  state.buffer = [];
  try {
    const [active, ended] = await Promise.all([
      api("/api/tasks?order=queue&status=queued,running,paused,waiting&limit=500"),
      api(endedURL()),
    ]);
    state.tasks = new Map();
    for (const t of active.tasks.concat(ended.tasks)) state.tasks.set(t.number, t);
    takeEnded(ended);
    const missed = state.buffer;
    state.buffer = null;
    // Events that arrived while the lists loaded may be newer than them.
    for (const ev of missed) applyEvent(ev);
    state.loaded = true;
    if (state.selected === null) state.selected = hashTask();
    if (state.selected === null) {
      const first = orderedActive()[0];
      if (first) state.selected = first.number;
    }
    if (state.selected !== null) {
      if (!state.tasks.has(state.selected)) fetchTask(state.selected, true);
      loadTimeline(state.selected);
      loadSteps(state.selected);
      loadFiles(state.selected);
    }
    render();
    loadStats();
    loadStrategies();
    loadSchedules();
  } catch (err) {
    state.buffer = null;
    if (err.status !== 401) toast(err.message);
  }
}

function applyEvent(ev) {
  const n = ev.task_number;
  const changes = (ev.payload && ev.payload.changes) || {};
  let t = state.tasks.get(n);
  if (!t && ev.type === "created") {
    t = {
      number: n, name: "", goal: "", status: "queued", progress: 0, previous_progress: 0,
      stale_counter: 0, iteration: 0, max_iterations: 0, max_stale_iterations: 0,
      room_id: "", requestor_id: "", last_processed_at: null, created_at: ev.time,
      started_at: null, completed_at: null, lease_owner: "", lease_expires_at: null,
      summary: "", error: "", prompt_tokens: 0, completion_tokens: 0,
    };
    state.tasks.set(n, t);
  }
  if (!t) { fetchTask(n); return; }
  if (changes.status && TERMINAL.has(changes.status) && !TERMINAL.has(t.status)) reloadEnded();
  if (ev.type === "created" || ev.type === "iterated" || changes.status) statsSoon();
  for (const [k, v] of Object.entries(changes)) {
    if (k.startsWith("approval_") || k === "strategy_state") continue;
    if (k === "ledger") { t.ledger = parseLedger(v); continue; }
    t[k] = norm(v);
  }
  if ("continues_number" in changes) t.continues_number = changes.continues_number || null;
  applyApproval(t, changes, (ev.payload && ev.payload.detail) || {});
  if (state.selected === n) {
    const last = state.timeline[state.timeline.length - 1];
    if (!last || ev.sequence > last.sequence) state.timeline.push(ev);
    if (ev.type === "iterated" || ev.type === "tool_ran" || ev.type === "created") loadFiles(n);
    if (ev.type === "iterated" || ev.type === "tool_ran") reloadSteps(n);
  }
  scheduleRender();
}

// parseLedger reads magentic's ledger from an event's change (JSON text,
// "" for none) into the API's shape (an object, or null).
function parseLedger(v) {
  if (!v || typeof v !== "string") return v || null;
  try { return JSON.parse(v); } catch { return null; }
}

// applyApproval keeps t.approval, the API's {id, action, params, granted},
// in step with an event's approval_action, approval_params (the call's
// JSON, as a string) and approval_granted columns, and the request's id
// the event's detail names. A call whose id no event gave is fetched.
function applyApproval(t, changes, detail) {
  if (!("approval_action" in changes || "approval_params" in changes || "approval_granted" in changes)) return;
  const a = Object.assign({ id: "", action: "", params: {}, granted: false }, t.approval || {});
  if ("approval_action" in changes) a.action = changes.approval_action || "";
  if ("approval_params" in changes) {
    try { a.params = changes.approval_params ? JSON.parse(changes.approval_params) : {}; } catch (_) { a.params = changes.approval_params; }
  }
  if ("approval_granted" in changes) a.granted = !!changes.approval_granted;
  a.id = a.granted ? "" : (detail.call || "");
  t.approval = a.action ? a : null;
  if (t.approval && !a.granted && !a.id) fetchTask(t.number);
}

// fetchTask reads task n alone (its steps come with loadSteps); loud
// says that a task not found is worth telling (one a link named).
async function fetchTask(n, loud) {
  if (state.fetching.has(n)) return;
  state.fetching.add(n);
  try {
    const t = await api("/api/tasks/" + n + "?steps=0");
    state.tasks.set(n, taskOnly(t));
    scheduleRender();
  } catch (err) {
    if (loud && err.status === 404) toast("There is no task #" + n + ".");
  } finally { state.fetching.delete(n); }
}

// taskOnly is a task body without the page of steps that came with it.
function taskOnly(t) {
  delete t.steps;
  delete t.steps_total;
  delete t.steps_next;
  return t;
}

// loadSteps reads a page of task n's steps with their results (the
// events carry each step without its result): the latest ones, or with
// before those of earlier iterations.
async function loadSteps(n, before, beforeCall) {
  try {
    const body = await api("/api/tasks/" + n + "?steps=" + STEPS_PAGE + (before ? "&before=" + before : "") +
      (before && beforeCall ? "&before_call=" + beforeCall : ""));
    if (state.selected !== n) return;
    for (const s of body.steps) state.steps.set(stepKey(s), s);
    if (before || !state.stepsLoaded) {
      state.stepsNext = body.steps_next;
      state.stepsNextCall = body.steps_next_call || 0;
    }
    state.stepsLoaded = true;
    const cur = state.tasks.get(n);
    const t = taskOnly(body);
    if (cur) Object.assign(cur, t); else state.tasks.set(n, t);
    scheduleRender();
  } catch (err) {
    if (err.status !== 401 && err.status !== 404) toast(err.message);
  }
}

// reloadSteps reads the latest steps again once a burst of events is over.
let stepsTimer = null;
function reloadSteps(n) {
  clearTimeout(stepsTimer);
  stepsTimer = setTimeout(() => { if (state.selected === n) loadSteps(n); }, 250);
}

// stepKey names a step among its task's: its iteration and, as a tools
// reply of several calls writes a step per call, its call.
function stepKey(s) {
  return s.iteration + "." + (s.call || 0);
}

// loadStep reads one step whole, for "Show all" and for a step older
// than the pages read.
async function loadStep(n, iteration, call) {
  try {
    const s = await api("/api/tasks/" + n + "/steps/" + iteration + (call ? "?call=" + call : ""));
    if (state.selected !== n) return null;
    state.steps.set(stepKey(s), s);
    return s;
  } catch (err) {
    if (err.status !== 401) toast(err.message);
    return null;
  }
}

async function loadTimeline(n) {
  try {
    const { events } = await api("/api/tasks/" + n + "/events");
    if (state.selected !== n) return;
    // Keep live events that arrived while this loaded.
    const seen = new Set(events.map((e) => e.sequence));
    state.timeline = events.concat(state.timeline.filter((e) => e.task_number === n && !seen.has(e.sequence)))
      .sort((a, b) => a.sequence - b.sequence);
    scheduleRender();
  } catch (err) {
    if (err.status !== 401) toast(err.message);
  }
}

// select shows task n in the detail panel and puts /#/tasks/N in the
// address bar (a history entry: back and forward move between tasks).
function select(n) {
  if (location.hash !== taskHash(n)) location.hash = taskHash(n);
  if (state.selected === n) return;
  state.selected = n;
  state.timeline = [];
  state.steps = new Map();
  state.stepsNext = null;
  state.stepsNextCall = 0;
  state.stepsLoaded = false;
  state.expanded = new Set();
  $("d-preview").hidden = true;
  if (!state.tasks.has(n)) fetchTask(n, true);
  render();
  loadTimeline(n);
  loadSteps(n);
  loadFiles(n);
}

// ---------- links ----------

function taskHash(n) { return "#/tasks/" + n; }

// hashTask is the task the address names (/#/tasks/N), or null.
function hashTask() {
  const m = /^#\/tasks\/([1-9][0-9]{0,17})$/.exec(location.hash);
  return m ? Number(m[1]) : null;
}

window.addEventListener("hashchange", () => {
  const n = hashTask();
  if (n !== null && state.loaded) select(n);
});

// ---------- ended tasks: filtered, paged ----------

function endedURL() {
  const e = state.ended;
  let u = "/api/tasks?order=recent&limit=" + ENDED_SHOWN + "&status=" + encodeURIComponent(e.status);
  if (e.q) u += "&q=" + encodeURIComponent(e.q);
  if (e.after !== null) u += "&after=" + e.after;
  return u;
}

function takeEnded(body) {
  const e = state.ended;
  for (const t of body.tasks) {
    const cur = state.tasks.get(t.number);
    if (cur) Object.assign(cur, t); else state.tasks.set(t.number, t);
  }
  e.numbers = body.tasks.map((t) => t.number);
  e.next = body.next;
  e.total = body.total;
  e.loaded = true;
}

let endedSeq = 0;
async function loadEnded() {
  const seq = ++endedSeq;
  try {
    const body = await api(endedURL());
    if (seq !== endedSeq) return; // a newer filter was asked for
    takeEnded(body);
    scheduleRender();
  } catch (err) {
    if (err.status !== 401) toast(err.message);
  }
}

// reloadEnded reads the first page again when a task ends; a later page
// stays as it is, as pages of a search do.
let endedTimer = null;
function reloadEnded() {
  if (state.ended.after !== null) return;
  clearTimeout(endedTimer);
  endedTimer = setTimeout(loadEnded, 300);
}

function filterEnded() {
  const e = state.ended;
  e.status = $("ended-status").value;
  e.q = $("ended-q").value.trim();
  e.after = null;
  e.back = [];
  loadEnded();
}

$("ended-status").addEventListener("change", filterEnded);
let filterTimer = null;
$("ended-q").addEventListener("input", () => { clearTimeout(filterTimer); filterTimer = setTimeout(filterEnded, 250); });
$("ended-filter").addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(filterTimer); filterEnded(); });
$("ended-older").addEventListener("click", () => {
  const e = state.ended;
  if (e.next === null) return;
  e.back.push(e.after);
  e.after = e.next;
  loadEnded();
});
$("ended-newer").addEventListener("click", () => {
  const e = state.ended;
  if (!e.back.length) return;
  e.after = e.back.pop();
  loadEnded();
});
$("d-older").addEventListener("click", () => {
  if (state.selected !== null && state.stepsNext) loadSteps(state.selected, state.stepsNext, state.stepsNextCall);
});

// loadStrategies fills the create form's picker with the task service's
// strategies (GET /api/strategies), a plugin's included; the page's own
// options, the built-in ones, stay when the server cannot be asked.
async function loadStrategies() {
  try {
    const body = await api("/api/strategies");
    const sel = $("strategy");
    const chosen = sel.value;
    const known = new Map([...sel.options].map((o) => [o.value, o.textContent]));
    sel.replaceChildren(...body.strategies.map((name) => {
      const o = el("option", "", known.get(name) || name);
      o.value = name;
      return o;
    }));
    if (body.strategies.includes(chosen)) sel.value = chosen;
  } catch (err) {
    if (err.status !== 401) toast(err.message);
  }
}

// ---------- chart ----------

// loadStats draws queue depth and iterations per minute over the last
// hour, as GET /api/stats works them out from the task events.
async function loadStats() {
  try {
    drawChart(await api("/api/stats?window=1h"));
  } catch (err) {
    $("chart-legend").textContent = "no numbers: " + err.message;
  }
}
setInterval(() => { if (state.loaded && !document.hidden) loadStats(); }, STATS_EVERY);

// statsSoon reads the chart again a little after the queue changes, at
// most once in STATS_SOON: each read walks the hour's events.
let statsTimer = null;
function statsSoon() {
  if (statsTimer) return;
  statsTimer = setTimeout(() => { statsTimer = null; loadStats(); }, STATS_SOON);
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

function drawChart(stats) {
  const box = $("chart");
  const W = 600, H = 110, top = 6;
  const pts = stats.points || [];
  const known = pts.filter((p) => p.queue_depth !== null);
  const maxDepth = Math.max(1, ...known.map((p) => p.queue_depth));
  const maxIts = Math.max(1, ...known.map((p) => p.iterations));
  const step = W / Math.max(pts.length, 1);
  const y = (v, max) => H - (H - top) * v / max;
  const parts = [box.querySelector("title")];
  // Iterations a minute: bars.
  pts.forEach((p, i) => {
    if (p.iterations === null || p.iterations === 0) return;
    const h = H - y(p.iterations, maxIts);
    parts.push(svg("rect", { class: "its", x: (i * step + step * 0.15).toFixed(1), y: (H - h).toFixed(1),
      width: (step * 0.7).toFixed(1), height: h.toFixed(1) }));
  });
  // Queue depth at each minute's end: a line, broken where it is unknown.
  let d = "";
  let pen = false;
  pts.forEach((p, i) => {
    if (p.queue_depth === null) { pen = false; return; }
    const x = ((i + 1) * step).toFixed(1), v = y(p.queue_depth, maxDepth).toFixed(1);
    d += (pen ? "L" : "M" + (i * step).toFixed(1) + " " + v + "L") + x + " " + v;
    pen = true;
  });
  if (d) parts.push(svg("path", { class: "depth", d }));
  // The scale: a line at each chart's top, its value beside the chart.
  parts.push(svg("line", { class: "grid", x1: 0, x2: W, y1: top, y2: top }));
  box.replaceChildren(...parts.filter(Boolean));
  box.dataset.points = String(known.length);
  $("chart-scale-depth").textContent = "— queue, top " + maxDepth + (maxDepth === 1 ? " task" : " tasks");
  $("chart-scale-its").textContent = "▮ iterations, top " + maxIts + "/min";
  // The minutes are the clock's (GET /api/stats): the axis names them.
  if (pts.length) {
    $("chart-from").textContent = hhmm(pts[0].time);
    $("chart-mid").textContent = hhmm(pts[Math.floor(pts.length / 2)].time);
    $("chart-to").textContent = hhmm(stats.to, true);
  }
  const last = known[known.length - 1];
  const total = known.reduce((s, p) => s + p.iterations, 0);
  // The peak counts now too: the chart's last point is the last whole
  // minute, and the queue may have grown since.
  let legend = "queue " + stats.queue_depth + " (peak " + Math.max(stats.queue_depth, ...known.map((p) => p.queue_depth)) + ")" +
    " · " + total + " iterations (peak " + Math.max(0, ...known.map((p) => p.iterations)) + "/min" +
    (last ? ", last minute " + last.iterations : "") + ")";
  if (stats.since) legend += " · counted from " + clock(stats.since);
  $("chart-legend").textContent = legend;
}

// ---------- files ----------

// previewBytes is how much of a file the preview shows.
const previewBytes = 4096;

// loadFiles lists the selected task's files; a click shows
// the start of one as text. The bytes are what a task wrote: they go into
// a <pre> as text, never as markup.
async function loadFiles(n) {
  let files = [];
  try {
    ({ files } = await api("/api/tasks/" + n + "/files"));
  } catch (err) {
    if (err.status !== 401 && err.status !== 404) toast(err.message);
    return;
  }
  if (state.selected !== n) return;
  const ul = $("d-files");
  ul.replaceChildren();
  if (files.length === 0) ul.append(el("li", "empty", "No files yet."));
  for (const f of files) {
    const li = el("li");
    const b = el("button", "file", f.path);
    b.type = "button";
    b.title = f.size + " bytes, sha256 " + f.sha256;
    b.addEventListener("click", () => previewFile(n, f.path));
    li.append(b, el("span", "size", f.size + " B"));
    ul.append(li);
  }
}

async function previewFile(n, path) {
  const headers = {};
  if (state.token) headers.Authorization = "Bearer " + state.token;
  const url = "/api/tasks/" + n + "/files/" + path.split("/").map(encodeURIComponent).join("/");
  const pre = $("d-preview");
  try {
    const res = await fetch(url, { headers, cache: "no-store" });
    if (!res.ok) throw new Error(res.status + " " + res.statusText);
    const bytes = new Uint8Array(await res.arrayBuffer());
    let text = new TextDecoder("utf-8", { fatal: false }).decode(bytes.subarray(0, previewBytes));
    if (bytes.length > previewBytes) text += "\n… " + (bytes.length - previewBytes) + " more bytes";
    pre.textContent = path + "\n\n" + text;
    pre.hidden = false;
  } catch (err) {
    toast("Cannot show " + path + ": " + err.message);
  }
}

// ---------- ordering ----------

function claimable(t) { return t.status === "queued" || t.status === "running"; }

function leased(t, now) {
  return !!t.lease_owner && t.lease_expires_at && Date.parse(t.lease_expires_at) > now;
}

// The queue's own order: never-processed first, then the task served
// longest ago, then the lowest number; then tasks that wait or are paused.
function orderedActive() {
  const rank = { queued: 0, running: 0, waiting: 1, paused: 2 };
  return [...state.tasks.values()].filter((t) => !TERMINAL.has(t.status)).sort((a, b) => {
    const ra = rank[a.status], rb = rank[b.status];
    if (ra !== rb) return ra - rb;
    if (ra === 0) {
      const la = a.last_processed_at ? Date.parse(a.last_processed_at) : -Infinity;
      const lb = b.last_processed_at ? Date.parse(b.last_processed_at) : -Infinity;
      if (la !== lb) return la - lb;
    }
    return a.number - b.number;
  });
}

// orderedEnded is the page of ended tasks the list API gave, newest first.
function orderedEnded() {
  return state.ended.numbers.map((n) => state.tasks.get(n)).filter((t) => t && TERMINAL.has(t.status));
}

// ---------- rendering ----------

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => { renderQueued = false; render(); });
}

const rows = new Map(); // number → <li>

function render() {
  const now = Date.now();
  const active = orderedActive();
  const ended = orderedEnded();
  const next = active.find((t) => claimable(t) && !leased(t, now));
  renderList($("queue"), active, next, now);
  renderList($("ended"), ended, null, now);
  for (const [n, li] of rows) {
    if (!state.tasks.has(n) || (TERMINAL.has(state.tasks.get(n).status) && !ended.includes(state.tasks.get(n)))) {
      li.remove();
      rows.delete(n);
    }
  }
  $("queue-empty").hidden = active.length > 0 || !state.loaded;
  renderEndedControls(ended);
  renderCounts(now);
  renderDetail(now);
}

function renderEndedControls(ended) {
  const e = state.ended;
  const filtered = e.q !== "" || $("ended-status").selectedIndex !== 0;
  const any = e.loaded && (e.total > 0 || filtered || e.after !== null);
  $("ended-head").hidden = !any;
  $("ended-filter").hidden = !any;
  $("ended-empty").hidden = !any || ended.length > 0;
  const pages = e.next !== null || e.back.length > 0;
  $("ended-pager").hidden = !any || !pages;
  $("ended-older").disabled = e.next === null;
  $("ended-newer").disabled = e.back.length === 0;
  const from = e.back.length * ENDED_SHOWN;
  $("ended-count").textContent = !e.loaded ? "" : ended.length === 0 ? (filtered ? "none match" : "") :
    (from + 1) + "–" + (from + ended.length) + " of " + e.total;
}

function renderList(list, tasks, next, now) {
  let prev = null;
  for (const t of tasks) {
    let li = rows.get(t.number);
    if (!li) { li = newRow(t.number); rows.set(t.number, li); }
    fillRow(li, t, t === next, now);
    const want = prev ? prev.nextSibling : list.firstChild;
    if (li.parentNode !== list || want !== li) list.insertBefore(li, want);
    prev = li;
  }
}

function newRow(n) {
  const li = el("li", "task");
  li.dataset.task = n;
  const num = el("a", "num", "#" + n);
  num.href = taskHash(n);
  num.title = "A link to task #" + n;
  li.append(num);
  const main = el("div", "main");
  const title = el("div", "title");
  title.append(el("span", "name"), el("span", "badge", "Next"));
  main.append(title, el("div", "sub"));
  const progress = el("div", "progress");
  const bar = el("div", "bar");
  bar.append(el("span"));
  progress.append(bar, el("span", "pct"));
  const status = el("div", "status");
  status.append(el("span", "chip"));
  li.append(main, progress, status, el("div", "actions"));
  li.addEventListener("click", (e) => {
    if (e.target.closest("button, a")) return; // a link selects through the address
    select(n);
  });
  return li;
}

function fillRow(li, t, isNext, now) {
  li.dataset.status = t.status;
  li.classList.toggle("selected", state.selected === t.number);
  li.classList.toggle("busy", t.status === "running" && leased(t, now));
  li.querySelector(".name").textContent = t.name || "(unnamed)";
  li.querySelector(".name").title = t.goal || "";
  li.querySelector(".badge").hidden = !isNext;
  li.querySelector(".sub").textContent = subline(t, now);
  li.querySelector(".bar > span").style.width = clamp(t.progress) + "%";
  li.querySelector(".pct").textContent = clamp(t.progress) + "%";
  const chip = li.querySelector(".chip");
  chip.className = chipClass(t, now);
  chip.textContent = statusText(t, now);
  const actions = li.querySelector(".actions");
  const want = controlsFor(t.status).join(",");
  if (actions.dataset.for !== want) {
    actions.dataset.for = want;
    actions.replaceChildren(...controlsFor(t.status).map((op) => controlButton(t.number, op)));
  }
}

// inRotation: a started task no worker holds now, between two of its
// iterations, waiting its turn. It shows as queued: "Running" means a
// worker holds it.
function inRotation(t, now) { return t.status === "running" && !leased(t, now); }

// chipClass is the status chip's class: an in-rotation task's is queued's.
function chipClass(t, now) { return "chip " + (inRotation(t, now) ? "queued" : t.status); }

function statusText(t, now) {
  if (inRotation(t, now)) return "Queued (in rotation)";
  if (t.status === "running") return "Running · iter " + t.iteration;
  if (t.status === "waiting" && WAIT_WORD[t.waiting_on]) return WAIT_WORD[t.waiting_on];
  return STATUS_WORD[t.status] || t.status;
}

function subline(t, now) {
  const parts = [];
  if (t.strategy && t.strategy !== "loop") parts.push(t.strategy);
  if (t.max_iterations) parts.push("iteration " + t.iteration + " of " + t.max_iterations);
  if (t.room_id) parts.push(t.room_id);
  else if (t.requestor_id) parts.push("by " + t.requestor_id);
  const when = TERMINAL.has(t.status) ? t.completed_at : (t.last_processed_at || t.created_at);
  if (when) parts.push((TERMINAL.has(t.status) ? "ended " : t.last_processed_at ? "served " : "created ") + ago(when, now));
  return parts.join(" · ");
}

function controlsFor(status) {
  switch (status) {
    case "queued": case "running": case "waiting": return ["pause", "cancel"];
    case "paused": return ["resume", "cancel"];
    default: return [];
  }
}

function controlButton(n, op) {
  const b = el("button", op === "cancel" ? "danger" : "", op[0].toUpperCase() + op.slice(1));
  b.type = "button";
  b.dataset.action = op;
  b.addEventListener("click", async (e) => {
    e.stopPropagation();
    b.disabled = true;
    try {
      // A JSON body: the server refuses a change sent as anything else.
      const t = await api("/api/tasks/" + n + "/" + op, { method: "POST", body: {} });
      const cur = state.tasks.get(n);
      if (cur) Object.assign(cur, t); else state.tasks.set(n, t);
      scheduleRender();
    } catch (err) {
      toast(err.message);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

function renderCounts(now) {
  const c = {};
  for (const t of state.tasks.values()) {
    const s = inRotation(t, now) ? "queued" : t.status; // running: a worker holds it
    c[s] = (c[s] || 0) + 1;
  }
  const box = $("counts");
  box.replaceChildren();
  for (const [label, keys] of [["queued", ["queued"]], ["running", ["running"]], ["waiting", ["waiting"]], ["paused", ["paused"]]]) {
    const n = keys.reduce((s, k) => s + (c[k] || 0), 0);
    if (!n && label !== "queued" && label !== "running") continue;
    const span = el("span");
    span.append(el("b", "", n), label);
    box.append(span);
  }
}

function renderDetail(now) {
  const t = state.selected !== null ? state.tasks.get(state.selected) : null;
  $("placeholder").hidden = !!t;
  $("detail-body").hidden = !t;
  if (!t) return;
  $("detail-body").dataset.status = t.status;
  $("d-num").textContent = "#" + t.number;
  $("d-num").href = taskHash(t.number);
  $("d-name").textContent = t.name;
  const chip = $("d-status");
  chip.className = chipClass(t, now);
  chip.textContent = statusText(t, now);
  $("d-goal").textContent = t.goal;
  $("d-bar").style.width = clamp(t.progress) + "%";
  $("d-pct").textContent = clamp(t.progress) + "%";

  const facts = [
    ["Iteration", t.iteration + " / " + t.max_iterations],
    ["Stale iterations", t.stale_counter + " / " + t.max_stale_iterations],
    ["Tokens", compact(t.prompt_tokens) + " in · " + compact(t.completion_tokens) + " out"],
    ["Room", t.room_id || "— (API only)"],
    ["Requested by", t.requestor_id || "—"],
    ["Created", t.created_at ? ago(t.created_at, now) : "—"],
  ];
  facts.unshift(["Strategy", (t.strategy || "loop") + (t.phase ? " · " + t.phase : "")]);
  if (t.max_tokens) facts.push(["Token budget", compact(t.max_tokens)]);
  if (t.continues_number) facts.push(["Continues", "#" + t.continues_number]);
  if (t.next_attempt_at && !TERMINAL.has(t.status) && Date.parse(t.next_attempt_at) > now) {
    facts.push(["Next attempt", "in " + span(Date.parse(t.next_attempt_at) - now) + " (model unavailable)"]);
  }
  if (t.started_at) facts.push(["Started", ago(t.started_at, now)]);
  if (t.completed_at) facts.push(["Ended", ago(t.completed_at, now) + " · took " + span(Date.parse(t.completed_at) - Date.parse(t.created_at))]);
  else if (t.lease_owner) facts.push(["Worker", t.lease_owner]);
  const dl = $("d-facts");
  dl.replaceChildren(...facts.map(([k, v]) => {
    const d = el("div");
    d.append(el("dt", "", k), el("dd", "", v));
    return d;
  }));

  const note = $("d-note");
  if (t.error && t.status !== "completed") {
    note.className = "note error"; note.textContent = t.error; note.hidden = false;
  } else if (t.summary) {
    note.className = "note summary"; note.textContent = t.summary; note.hidden = false;
  } else {
    note.hidden = true;
  }

  renderDecision(t);
  renderStrategyState(t);

  const ctl = $("d-controls");
  const want = t.number + ":" + controlsFor(t.status).join(",");
  if (ctl.dataset.for !== want) {
    ctl.dataset.for = want;
    ctl.replaceChildren(...controlsFor(t.status).map((op) => controlButton(t.number, op)));
  }
  renderTimeline();
}

// ---------- strategy state ----------

// strategyStateOf is the latest strategy_state the selected task's events
// recorded (what a strategy keeps between claims: review's plan, verdict
// and notes), parsed; null when none.
function strategyStateOf(n) {
  for (let i = state.timeline.length - 1; i >= 0; i--) {
    const ev = state.timeline[i];
    const ch = (ev.payload && ev.payload.changes) || {};
    if (ev.task_number !== n || !("strategy_state" in ch)) continue;
    try { return ch.strategy_state ? JSON.parse(ch.strategy_state) : null; } catch (_) { return null; }
  }
  return null;
}

// renderStrategyState shows what the strategy keeps that explains the
// task: magentic's ledger (facts, plan, the agent chosen, stalls) and
// review's plan, latest verdict and notes.
function renderStrategyState(t) {
  const box = $("d-strategy");
  const parts = [];
  const block = (label, text, cls) => {
    const d = el("div", "ss-item " + (cls || ""));
    d.append(el("span", "ss-label", label), el("p", "ss-text", text));
    return d;
  };
  if (t.strategy === "magentic" && t.ledger && typeof t.ledger === "object") {
    const l = t.ledger;
    parts.push(el("h3", "", "Ledger"));
    if (l.plan) parts.push(block("Plan", l.plan, "plan"));
    if (Array.isArray(l.facts) && l.facts.length) {
      const d = el("div", "ss-item facts-list");
      const ul = el("ul");
      for (const f of l.facts) ul.append(el("li", "", f));
      d.append(el("span", "ss-label", "Facts"), ul);
      parts.push(d);
    }
    const tail = [];
    if (l.chosen) tail.push("chosen: " + l.chosen);
    tail.push("stalls: " + (l.stalls || 0));
    parts.push(el("p", "ss-meta", tail.join(" · ")));
  }
  if (t.strategy === "review") {
    const st = strategyStateOf(t.number) || {};
    if (st.plan || st.verdict || st.notes) {
      parts.push(el("h3", "", "Review"));
      if (st.plan) parts.push(block("Plan", st.plan, "plan"));
      if (st.verdict) parts.push(block("Latest verdict", st.verdict.replace(/_/g, " "), "verdict"));
      if (st.notes) parts.push(block("Review notes", st.notes, "notes"));
      if (st.attempts) {
        parts.push(el("p", "ss-meta", "attempts: " + Object.entries(st.attempts).map(([k, v]) => k + " " + v).join(", ")));
      }
    }
  }
  box.replaceChildren(...parts);
  box.hidden = parts.length === 0;
}

// ---------- decisions ----------

// decisionFor says what a person may decide about t now: "answer" its
// question, "approval" of the call it waits to make, "granted" (approved,
// to run next), "retry" an ended task, or "" for nothing.
function decisionFor(t) {
  const waits = t.status === "waiting" || t.status === "paused";
  if (waits && t.waiting_on === "answer") return "answer";
  if (waits && t.waiting_on === "approval" && t.approval && !t.approval.granted) return "approval";
  if (t.approval && t.approval.granted && !TERMINAL.has(t.status)) return "granted";
  if (TERMINAL.has(t.status)) return "retry";
  return "";
}

// renderDecision shows the box for what may be decided about t. It is
// rebuilt only when that changes, so text being typed is kept.
function renderDecision(t) {
  const box = $("d-decide");
  const mode = decisionFor(t);
  const want = t.number + ":" + mode + ":" + (t.approval ? JSON.stringify(t.approval) : "");
  if (box.dataset.for !== want) {
    box.dataset.for = want;
    box.dataset.mode = mode;
    box.replaceChildren(...decisionBox(t, mode));
  }
  box.hidden = !mode;
  const q = $("d-question");
  if (q) {
    const question = questionOf(t.number);
    q.textContent = question ? visible(question) : "The task is waiting for an answer.";
  }
}

function decisionBox(t, mode) {
  const n = t.number;
  switch (mode) {
    case "answer": {
      const form = el("form", "decide-form");
      form.id = "d-answer";
      const text = el("textarea");
      text.id = "d-answer-text";
      text.rows = 3;
      text.maxLength = 4000;
      text.required = true;
      text.placeholder = "Your answer";
      text.setAttribute("aria-label", "Answer to the task's question");
      const send = el("button", "primary", "Send answer");
      send.type = "submit";
      send.dataset.action = "answer";
      form.append(text, send);
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        const answer = text.value.trim();
        if (!answer) return;
        decide(send, n, "answer", { text: answer }, () => { text.value = ""; });
      });
      const q = el("p", "question");
      q.id = "d-question";
      return [el("h3", "", "The task asks"), q, form];
    }
    case "approval": {
      const a = t.approval;
      const call = el("pre", "call");
      call.id = "d-call";
      call.append(el("code", "", visible(a.action)), "\n" + visibleLines(pretty(a.params)));
      const approve = el("button", "primary", "Approve");
      approve.type = "button";
      approve.dataset.action = "approve";
      // The decision is for this call: if the task asks another by
      // now, the API refuses it (409) and changes nothing.
      approve.addEventListener("click", () => decide(approve, n, "approve", { call: a.id || "" }));
      const reason = el("input");
      reason.id = "d-deny-reason";
      reason.maxLength = 4000;
      reason.placeholder = "Reason to deny (optional)";
      reason.setAttribute("aria-label", "Reason to deny the call");
      const deny = el("button", "danger", "Deny");
      deny.type = "button";
      deny.dataset.action = "deny";
      deny.addEventListener("click", () => decide(deny, n, "deny", { reason: reason.value.trim(), call: a.id || "" }));
      const row = el("div", "decide-actions");
      row.append(approve, reason, deny);
      return [el("h3", "", "Approval needed"), el("p", "lead", "Task #" + n + " wants to run:"), call, row];
    }
    case "granted": {
      const call = el("pre", "call");
      call.append(el("code", "", t.approval.action), "\n" + pretty(t.approval.params));
      return [el("h3", "", "Approved"), el("p", "lead", "This call runs at the task's next iteration:"), call];
    }
    case "retry": {
      const form = el("form", "decide-form inline");
      form.id = "d-retry";
      const ctx = el("input");
      ctx.id = "d-retry-context";
      ctx.maxLength = 4000;
      ctx.placeholder = "More context for the new run (optional)";
      ctx.setAttribute("aria-label", "More context for the new run");
      const retry = el("button", "", "Retry");
      retry.type = "submit";
      retry.dataset.action = "retry";
      form.append(ctx, retry);
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        decide(retry, n, "retry", { context: ctx.value.trim() }, (created) => {
          ctx.value = "";
          select(created.number);
        });
      });
      return [el("h3", "", "Run it again"),
        el("p", "lead", "A new task with the same goal, this one's files and a summary of its run."), form];
    }
  }
  return [];
}

// decide POSTs a decision about task n (a JSON body, as the server
// requires of every change) and takes the task it answers with.
async function decide(button, n, op, body, done) {
  button.disabled = true;
  try {
    const t = await api("/api/tasks/" + n + "/" + op, { method: "POST", body });
    const cur = state.tasks.get(t.number);
    if (cur) Object.assign(cur, t); else state.tasks.set(t.number, t);
    if (done) done(t);
    scheduleRender();
  } catch (err) {
    toast(err.message);
  } finally {
    button.disabled = false;
  }
}

// questionOf finds the question task n asked last, in its timeline.
function questionOf(n) {
  for (let i = state.timeline.length - 1; i >= 0; i--) {
    const ev = state.timeline[i];
    if (ev.task_number !== n) continue;
    const p = ev.payload || {};
    const s = p.step || {};
    if (s.action === "ask_user" && s.params && s.params.question) return String(s.params.question);
    if (p.detail && p.detail.question) return String(p.detail.question);
  }
  return "";
}

// visibleLines shows pretty-printed parameters with every character seen
// for what it is (visible, in visible.js, the twin of what chat and the
// CLI show): each line apart, its leading indentation, which is the
// pretty-printing's own, left as it is.
function visibleLines(text) {
  return text.split("\n").map((line) => {
    const indent = line.match(/^ */)[0];
    return indent + visible(line.slice(indent.length));
  }).join("\n");
}

function pretty(params) {
  if (params === undefined || params === null) return "";
  if (typeof params === "string") return params;
  return JSON.stringify(params, null, 2);
}

function renderTimeline() {
  const ol = $("d-timeline");
  const items = [];
  let progress = 0;
  state.timeline.forEach((ev, i) => {
    const ch = (ev.payload && ev.payload.changes) || {};
    // A claim is worth a line only while its iteration runs.
    const shown = ev.type !== "claimed" || i === state.timeline.length - 1;
    if (shown) items.push(describe(ev, progress));
    if (typeof ch.progress === "number") progress = ch.progress;
  });
  items.reverse(); // newest first
  // Keep the parameters a person opened open.
  const opened = new Set([...ol.querySelectorAll("li")].filter((li) => li.querySelector("details[open]")).map((li) => li.dataset.key));
  for (const li of items) if (opened.has(li.dataset.key)) li.querySelector("details")?.setAttribute("open", "");
  ol.replaceChildren(...items);
  $("d-older").hidden = !state.stepsNext;
}

function describe(ev, before) {
  const p = ev.payload || {};
  const ch = p.changes || {};
  const d = p.detail || {};
  const li = el("li");
  li.dataset.type = ev.type;
  li.dataset.key = String(ev.sequence);
  const time = el("time", "", clock(ev.time));
  time.dateTime = ev.time;
  let iter = 0;
  const what = el("div", "what");
  const head = el("div", "line");
  what.append(head);
  let kind = "";
  switch (ev.type) {
    case "created":
      head.append("Created by " + (ev.actor || "someone"));
      break;
    case "claimed":
      kind = "minor";
      head.append("Iteration running on " + ev.actor + "…");
      break;
    case "iterated":
    case "tool_ran": {
      if (!p.step && d.wait === "approval") {
        kind = "ctl";
        head.append("Asks to run ", el("code", "", d.action || "a tool"));
        const params = paramSummary(d.params);
        if (params) head.append(el("span", "param", params));
        break;
      }
      // The event has the step without its result; the steps read from
      // the task have it (or a "Show result" reads it).
      const s = Object.assign({}, p.step || {}, state.steps.get(stepKey(p.step || {})) || {});
      // A tools reply of several calls: a step per call, each on its own
      // line under the first.
      const calls = (p.steps || []).map((c) => Object.assign({}, c, state.steps.get(stepKey(c)) || {}));
      kind = s.success && calls.every((c) => c.success) ? "ok" : "bad";
      iter = s.iteration || ch.iteration || 0;
      // Whose turn it was, in a task whose strategy is not loop.
      const task = state.tasks.get(ev.task_number);
      const multi = task && task.strategy && task.strategy !== "loop";
      if (s.role && multi) head.append(el("span", "role", s.role + " →"));
      if (s.action) {
        head.append(el("code", "", s.action));
        const params = paramSummary(s.params);
        if (params) head.append(el("span", "param", params));
      } else if (!multi || !THINKING.has(s.role)) {
        head.append(el("span", "noact", s.role === "action" && s.success ? "final answer" : "no action"));
      }
      head.append(el("span", s.success ? "okmark" : "badmark", s.success ? "✓" : "✗"));
      const after = typeof ch.progress === "number" ? ch.progress : before;
      head.append(el("span", "delta", after > before ? before + "% → " + after + "%" : after + "%"));
      stepBody(what, ev.task_number, s);
      for (const c of calls) {
        const line = el("div", "line");
        if (c.role && multi) line.append(el("span", "role", c.role + " →"));
        line.append(el("code", "", c.action || "no action"));
        const cp = paramSummary(c.params);
        if (cp) line.append(el("span", "param", cp));
        line.append(el("span", c.success ? "okmark" : "badmark", c.success ? "✓" : "✗"));
        what.append(line);
        stepBody(what, ev.task_number, c);
      }
      if (ch.status && TERMINAL.has(ch.status)) {
        what.append(el("span", "detail-text", (STATUS_WORD[ch.status] || ch.status) + (ch.error ? ": " + ch.error : "")));
      }
      break;
    }
    case "paused": kind = "ctl"; head.append("Paused by " + ev.actor); break;
    case "resumed": kind = "ctl"; head.append("Resumed by " + ev.actor); break;
    case "canceled": kind = "bad"; head.append("Canceled by " + ev.actor); break;
    case "waiting": kind = "ctl"; head.append("Waiting" + (d.question ? ": " + d.question : "")); break;
    case "answered":
      kind = "ok";
      head.append("Answered by " + ev.actor);
      if (d.answer) what.append(el("span", "detail-text", clip(String(d.answer), 400)));
      break;
    case "approved":
      kind = "ok";
      head.append("Approved by " + ev.actor + ": ", el("code", "", d.action || "the call"));
      break;
    case "denied":
      kind = "bad";
      head.append("Denied by " + ev.actor);
      if (d.reason) what.append(el("span", "detail-text", d.reason));
      break;
    case "model_unavailable":
      kind = "minor";
      head.append("Model unavailable; tried again later");
      if (d.reason) what.append(el("span", "detail-text", clip(String(d.reason), 200)));
      break;
    case "subtask_ended":
      kind = "minor";
      head.append(d.subtask ? "Subtask #" + d.subtask + " " + (STATUS_WORD[d.status] || d.status || "ended").toLowerCase() : "Subtasks ended");
      break;
    case "released": kind = "minor"; head.append("Released by " + ev.actor + " (shutting down)"); break;
    case "result_rejected":
      kind = "bad";
      head.append("Late result of " + ev.actor + " rejected");
      if (d.reason) what.append(el("span", "detail-text", d.reason));
      break;
    default:
      kind = "minor";
      head.append(ev.type + " by " + ev.actor);
  }
  li.className = kind;
  const when = el("div", "when");
  when.append(time);
  if (iter) when.append(el("span", "iter", "iter " + iter));
  li.append(when, el("span", "mark"), what);
  return li;
}

// The roles whose steps think rather than act: their text is the step.
const THINKING = new Set(["thought", "observation", "analysis", "reviewer", "supervisor"]);
const THOUGHT_LABEL = { thought: "Thought", observation: "Observation", analysis: "Analysis", reviewer: "Review", supervisor: "Decision" };

// stepBody explains one step under its line: its thought (or
// observation), its parameters, the first lines of its result (all of it
// on "Show all") and its error. Everything is text, never markup.
function stepBody(what, n, s) {
  if (s.thought) {
    const p = el("p", "step-thought");
    p.dataset.role = s.role || "agent";
    p.append(el("span", "label", (THOUGHT_LABEL[s.role] || "Thought") + ": "), String(s.thought));
    what.append(p);
  }
  if (s.action && s.params && typeof s.params === "object" && Object.keys(s.params).length) {
    const det = el("details", "step-params");
    det.append(el("summary", "", "parameters"), el("pre", "", visibleLines(pretty(s.params))));
    what.append(det);
  }
  if (s.error) what.append(el("p", "step-error", s.error));
  const key = n + ":" + stepKey(s);
  if (typeof s.result === "string" && s.result !== "") {
    const whole = !s.result_clipped;
    const lines = s.result.split("\n");
    const long = lines.length > RESULT_LINES || s.result.length > RESULT_CHARS;
    const open = state.expanded && state.expanded.has(key);
    const text = open || !long ? s.result : lines.slice(0, RESULT_LINES).join("\n").slice(0, RESULT_CHARS);
    const pre = el("pre", "step-result" + (open ? " open" : ""), text);
    what.append(pre);
    if (long || !whole) {
      const more = el("button", "more", open ? "Show less" :
        "Show all" + (s.result_bytes ? " (" + compact(s.result_bytes) + " bytes)" : ""));
      more.type = "button";
      more.addEventListener("click", async () => {
        if (!state.expanded) state.expanded = new Set();
        if (state.expanded.has(key)) { state.expanded.delete(key); scheduleRender(); return; }
        if (!whole) {
          more.disabled = true;
          if (!(await loadStep(n, s.iteration, s.call))) { more.disabled = false; return; }
        }
        state.expanded.add(key);
        scheduleRender();
      });
      what.append(more);
    }
  } else if (s.action && !state.steps.has(stepKey(s)) && state.stepsLoaded) {
    // Older than the steps read: its result is read when asked for.
    const more = el("button", "more", "Show result");
    more.type = "button";
    more.addEventListener("click", async () => {
      more.disabled = true;
      if (await loadStep(n, s.iteration, s.call)) scheduleRender(); else more.disabled = false;
    });
    what.append(more);
  }
}

function paramSummary(params) {
  if (!params || typeof params !== "object") return "";
  const keys = Object.keys(params);
  if (!keys.length) return "";
  const main = params.path || params.url || params.command || params.text || params.question || params.goal;
  const s = typeof main === "string" ? main : JSON.stringify(params);
  return clip(s.replace(/\s+/g, " "), 80);
}

// ---------- small helpers ----------

function clamp(p) { return Math.max(0, Math.min(100, Math.round(p || 0))); }
function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
function compact(n) {
  n = n || 0;
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e4) return Math.round(n / 1e3) + "k";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return String(n);
}
// zoned is a date and time in the reader's time zone, saying which: a
// schedule's next run is read against a cron expression, whose zone
// (UTC unless the schedule says) may not be the reader's.
function zoned(iso) {
  const d = new Date(iso);
  return isNaN(d) ? "" : d.toLocaleString([], { year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", hour12: false, timeZoneName: "short" });
}
// hhmm is a time of day to the minute, in the reader's time zone.
function hhmm(iso, zone) {
  const d = new Date(iso);
  return isNaN(d) ? "" : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false,
    timeZoneName: zone ? "short" : undefined });
}
function clock(iso) {
  const d = new Date(iso);
  return isNaN(d) ? "" : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}
function span(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m " + (s % 60) + "s";
  return Math.floor(m / 60) + "h " + (m % 60) + "m";
}
function ago(iso, now) {
  const t = Date.parse(iso);
  if (isNaN(t)) return "";
  const s = Math.round((now - t) / 1000);
  if (s < 5) return "just now";
  if (s < 60) return s + "s ago";
  if (s < 3600) return Math.floor(s / 60) + "m ago";
  if (s < 86400) return Math.floor(s / 3600) + "h ago";
  return new Date(t).toLocaleDateString();
}

let toastTimer = null;
function toast(msg) {
  const t = $("toast");
  t.textContent = msg;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, 6000);
}

// ---------- create ----------

$("create").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = $("goal");
  const goal = input.value.trim();
  if (!goal) return;
  const button = e.target.querySelector("button");
  button.disabled = true;
  try {
    const t = await api("/api/tasks", { method: "POST", body: { goal, strategy: $("strategy").value } });
    if (!state.tasks.has(t.number)) state.tasks.set(t.number, t);
    input.value = "";
    select(t.number);
  } catch (err) {
    toast(err.message);
  } finally {
    button.disabled = false;
  }
});

// ---------- schedules ----------

const SCHEDULES_EVERY = 30000; // how often the schedules are read again

// loadSchedules lists the schedules with their next run times
// (docs/schedules.md); a server without a scheduler (503) shows none.
async function loadSchedules() {
  let list;
  try {
    ({ schedules: list } = await api("/api/schedules"));
  } catch (err) {
    if (err.status !== 401 && err.status !== 503) toast(err.message);
    return;
  }
  $("schedules-head").hidden = false;
  const ul = $("schedules");
  ul.replaceChildren();
  ul.hidden = list.length === 0;
  $("schedules-empty").hidden = list.length !== 0;
  for (const sc of list) {
    const li = el("li", "schedule" + (sc.paused ? " paused" : ""));
    li.dataset.id = sc.id;
    const head = el("div", "schedule-head");
    head.append(el("span", "num", "#" + sc.id), el("span", "name", sc.name), el("code", "cron", sc.cron));
    const next = sc.paused ? "paused" : "next run " + zoned(sc.next_run_at);
    let sub = next;
    if (sc.last_task) sub += " · last run #" + sc.last_task;
    if (sc.failures) sub += " · " + sc.failures + " failed in a row";
    const buttons = el("div", "controls");
    buttons.append(scheduleButton(sc, sc.paused ? "resume" : "pause"), scheduleButton(sc, "delete"));
    li.append(head, el("div", "sub", sub), buttons);
    ul.append(li);
  }
}

function scheduleButton(sc, op) {
  const b = el("button", op === "delete" ? "danger" : "", op[0].toUpperCase() + op.slice(1));
  b.type = "button";
  b.dataset.action = op;
  b.addEventListener("click", async () => {
    if (op === "delete" && !confirm("Delete schedule #" + sc.id + "? Its runs are kept.")) return;
    b.disabled = true;
    try {
      // A JSON body: the server refuses a change sent as anything else.
      if (op === "delete") await api("/api/schedules/" + sc.id, { method: "DELETE", body: {} });
      else await api("/api/schedules/" + sc.id + "/" + op, { method: "POST", body: {} });
      await loadSchedules();
    } catch (err) {
      toast(err.message);
      b.disabled = false;
    }
  });
  return b;
}

setInterval(() => { if (state.loaded) loadSchedules(); }, SCHEDULES_EVERY);

// ---------- memory (docs/memory.md) ----------

function showView(memory) {
  $("tasks-view").hidden = memory;
  $("memory-view").hidden = !memory;
  $("tab-tasks").setAttribute("aria-selected", String(!memory));
  $("tab-memory").setAttribute("aria-selected", String(memory));
  if (memory) { loadMemories(); loadKnowledge(); }
}
$("tab-tasks").addEventListener("click", () => showView(false));
$("tab-memory").addEventListener("click", () => showView(true));

let memorySeq = 0;
async function loadMemories() {
  const seq = ++memorySeq;
  const q = new URLSearchParams({ limit: "100" });
  const room = $("memory-room").value.trim();
  const text = $("memory-q").value.trim();
  if (room) q.set("room", room);
  if (text) q.set("q", text);
  try {
    const body = await api("/api/memories?" + q.toString());
    if (seq !== memorySeq) return; // a newer search answered first
    const list = $("memories");
    list.replaceChildren();
    for (const m of body.memories || []) {
      const li = el("li");
      li.dataset.memory = m.id;
      const who = el("div", "who");
      who.append(el("b", null, m.author || m.author_id), el("span", null, m.room), el("span", null, ago(m.created_at, Date.now())));
      if (m.from_bot) who.append(el("span", "chip", "bot"));
      li.append(who, el("div", "text", m.text));
      list.append(li);
    }
    $("memories-empty").hidden = list.children.length > 0;
  } catch (err) {
    toast(err.message);
  }
}
$("memory-search").addEventListener("submit", (e) => { e.preventDefault(); loadMemories(); });

async function loadKnowledge() {
  try {
    const body = await api("/api/knowledge");
    const list = $("knowledge");
    list.replaceChildren();
    for (const d of body.documents || []) {
      const li = el("li");
      li.dataset.document = d.id;
      const who = el("div", "who");
      who.append(el("b", null, d.title), el("span", null, d.room || "every room"),
        el("span", null, d.passages + (d.passages === 1 ? " passage" : " passages")), el("span", null, ago(d.created_at, Date.now())));
      const del = el("button", "danger", "Delete");
      del.type = "button";
      del.addEventListener("click", async () => {
        if (!confirm("Delete the document “" + d.title + "” and its passages?")) return;
        del.disabled = true;
        try {
          await api("/api/knowledge/" + d.id, { method: "DELETE", body: {} });
          li.remove();
          $("knowledge-empty").hidden = list.children.length > 0;
        } catch (err) {
          del.disabled = false;
          toast(err.message);
        }
      });
      li.append(who, del);
      list.append(li);
    }
    $("knowledge-empty").hidden = list.children.length > 0;
  } catch (err) {
    toast(err.message);
  }
}

// Relative times age without events.
setInterval(() => { if (state.loaded) render(); }, 15000);

startStream();
