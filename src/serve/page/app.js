// The page of `ralph serve`. Everything a loop, a model or a clone wrote
// reaches the page as text nodes only: nothing here parses HTML, and no
// link is made from what a loop wrote (a loop's link is its id, checked).
'use strict';

const ID = /^[0-9a-f]{32}$/;
const here = location.pathname.startsWith('/loop/') ? location.pathname.slice(6) : null;

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'on') for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
    else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function svg(tag, attrs, ...kids) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

const usd = (v) => '$' + (v || 0).toFixed(2);
const when = (t) => {
  if (!t) return '';
  const d = typeof t === 'number' ? new Date(t) : new Date(t);
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
};
const ago = (t) => {
  if (!t) return 'never';
  const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000));
  if (s < 60) return s + 's ago';
  if (s < 3600) return Math.round(s / 60) + 'm ago';
  if (s < 86400) return Math.round(s / 3600) + 'h ago';
  return Math.round(s / 86400) + 'd ago';
};

function stateOf(l) {
  const s = l.state || {};
  switch (s.kind) {
    case 'running': return ['running', 'running'];
    case 'paused': return ['paused until ' + when(s.until), 'paused'];
    case 'waiting': return [s.until ? 'asking until ' + when(s.until) : 'waiting', 'waiting'];
    case 'ended': return [String(s.outcome || 'ended'), s.outcome === 'complete' ? 'complete' : 'bad'];
    case 'killed': return ['killed', 'bad'];
    default: return ['idle', ''];
  }
}

function say(text, bad) {
  const s = document.getElementById('said');
  s.textContent = text;
  s.className = bad ? 'bad' : '';
}

async function act(id, action, body) {
  if (!ID.test(id)) return;
  try {
    const r = await fetch('/api/loop/' + id + '/' + action, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body || {}),
      credentials: 'same-origin',
    });
    const v = await r.json();
    say(v.said || v.error || ('HTTP ' + r.status), !r.ok);
  } catch (e) {
    say('could not reach ralph serve: ' + e, true);
  }
}

function button(label, f, cls) {
  return el('button', { class: cls || '', type: 'button', 'data-act': label, on: { click: f } }, label);
}

function actions(l) {
  const running = l.pid !== null && l.pid !== undefined;
  const b = [];
  if (running) {
    b.push(button('Stop', () => act(l.id, 'stop', {}), 'danger'));
    b.push(button('Stop after this session', () => act(l.id, 'stop', { after_session: true })));
  } else if (l.run_id && l.state && l.state.kind !== 'idle' && !(l.state.kind === 'ended' && l.state.outcome === 'complete')) {
    b.push(button('Resume', () => act(l.id, 'resume', {})));
  }
  return el('div', { class: 'actions' }, b);
}

function question(l) {
  const q = l.question;
  if (!q && !l.waiting) return null;
  const text = q ? q.text : l.waiting;
  const input = el('input', { type: 'text', placeholder: 'Your answer', 'aria-label': 'answer', maxlength: '4000' });
  const options = (q && q.options ? q.options : []).map((o, i) =>
    button((i + 1) + '. ' + o, () => act(l.id, 'answer', { option: i + 1 })));
  return el('div', { class: 'question' },
    el('div', { class: 'text' }, text),
    el('div', { class: 'actions' }, options, input,
      button('Answer', () => { if (input.value.trim()) act(l.id, 'answer', { text: input.value }); })));
}

function facts(l) {
  const spec = l.spec ? l.spec.done + '/' + l.spec.total + ' steps' : 'no spec';
  const bar = l.spec && l.spec.total ? el('span', { class: 'bar' }, el('span', {})) : null;
  if (bar) bar.firstChild.style.width = Math.round(100 * l.spec.done / l.spec.total) + '%';
  return el('div', { class: 'facts' }, bar, ' ', spec,
    ' · ', usd(l.cost_usd), ' · ', (l.tokens || 0).toLocaleString(), ' tokens',
    ' · iteration ', l.iteration || 0, '/', l.max_iterations || 0,
    ' · ', l.agent, ' · last activity ', ago(l.last_activity),
    l.worker ? ' · worker ' + l.worker : '', l.branch ? ' · ' + l.branch : '');
}

// A part of the page, rebuilt only when what it shows changed: a field
// being typed in, or a button about to be clicked, stays where it is.
function put(holder, key, build) {
  if (holder._key === key) return;
  holder._key = key;
  holder.replaceChildren(...[build()].flat().filter((x) => x));
}

function stateSpan(l) {
  const [st, cls] = stateOf(l);
  return el('span', { class: 'state ' + cls }, st);
}

const cards = new Map();

function loopCard(l) {
  let c = cards.get(l.id);
  if (!c) {
    const parts = {};
    for (const p of ['name', 'st', 'step', 'acts', 'facts', 'q']) parts[p] = el('div', { class: p });
    c = { el: el('div', { class: 'card loop', 'data-loop': l.name }, Object.values(parts)), parts };
    cards.set(l.id, c);
  }
  const p = c.parts;
  put(p.name, l.name, () => (ID.test(l.id) ? el('a', { href: '/loop/' + l.id }, l.name) : l.name));
  put(p.st, JSON.stringify(l.state), () => stateSpan(l));
  put(p.step, l.step || '', () => l.step || '');
  put(p.acts, JSON.stringify([l.pid, l.run_id, l.state]), () => actions(l));
  put(p.facts, JSON.stringify([l.spec, l.cost_usd, l.tokens, l.iteration, l.max_iterations, l.agent, l.last_activity, l.worker, l.branch]), () => facts(l));
  put(p.q, JSON.stringify([l.question, l.waiting]), () => question(l));
  return c.el;
}

const heads = new Map();

function renderList(o) {
  const main = document.getElementById('main');
  const kids = [];
  if (!o.projects.length) {
    kids.push(el('p', { class: 'dim' }, 'No loops on this machine yet: `ralph loop` in a project starts one.'));
  }
  for (const p of o.projects) {
    if (!heads.has(p.path)) heads.set(p.path, el('h2', {}, p.path));
    kids.push(heads.get(p.path));
    for (const l of p.loops) kids.push(loopCard(l));
  }
  const same = kids.length === main.children.length && kids.every((k, i) => main.children[i] === k);
  if (!same) main.replaceChildren(...kids);
}

// A run's page.
let view = null;
let shown = null; // the session shown: { n, end }
let picked = false; // a session picked by hand: the newest is not followed
let followed = null; // its lines element
let lastLoop = '';

function chart(points) {
  if (!points.length) return el('p', { class: 'dim' }, 'No session has ended yet.');
  const W = 600, H = 150, P = 30;
  const t0 = points[0].at, t1 = Math.max(points[points.length - 1].at, t0 + 1);
  const top = Math.max(points[points.length - 1].usd, 0.01);
  const x = (t) => P + (W - 2 * P) * (t - t0) / (t1 - t0);
  const y = (v) => H - P + 10 - (H - P) * v / top;
  const pts = [[x(t0), y(0)], ...points.map((p) => [x(p.at), y(p.usd)])];
  return svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'cost over time' },
    svg('line', { x1: P, y1: y(0), x2: W - P, y2: y(0) }),
    svg('polyline', { points: pts.map((p) => p.join(',')).join(' ') }),
    svg('text', { x: P, y: 12 }, usd(top) + ' spent'),
    svg('text', { x: P, y: H - 4 }, when(t0)),
    svg('text', { x: W - P - 60, y: H - 4 }, when(t1)));
}

function board(b) {
  if (!b) return null;
  return el('div', {}, el('h2', {}, 'Board'), el('table', {},
    el('tr', {}, el('th', {}, 'step'), el('th', {}, 'where'), el('th', {}, 'worker'), el('th', {}, 'note')),
    b.map((s) => el('tr', {}, el('td', {}, s.step), el('td', {}, s.place), el('td', {}, s.worker || ''), el('td', {}, s.note || '')))));
}

function controls(l) {
  const title = el('input', { type: 'text', placeholder: 'A step to add', 'aria-label': 'step', maxlength: '500' });
  const limit = el('select', { 'aria-label': 'limit' },
    el('option', { value: 'iterations' }, 'sessions'), el('option', { value: 'cost_usd' }, 'dollars'),
    el('option', { value: 'time' }, 'time (e.g. 30m)'), el('option', { value: 'tokens' }, 'tokens'));
  const by = el('input', { type: 'text', placeholder: 'by', 'aria-label': 'by', size: '8' });
  const raise = () => {
    const k = limit.value;
    const v = k === 'time' ? by.value.trim() : Number(by.value);
    act(l.id, 'raise', { [k]: v });
  };
  return el('div', {},
    el('div', { class: 'actions' }, title, button('Add step', () => { if (title.value.trim()) act(l.id, 'add', { title: title.value }); })),
    el('div', { class: 'actions' }, 'Raise ', limit, ' by ', by, button('Raise', raise)));
}

async function showSession(n) {
  const r = await fetch('/api/loop/' + here + '/session/' + n, { credentials: 'same-origin' });
  if (!r.ok) return;
  const t = await r.json();
  shown = { n: t.n, end: t.end };
  followed.replaceChildren((t.cut ? '(earlier lines left out)\n' : '') + t.lines.join('\n') + (t.lines.length ? '\n' : ''));
  followed.scrollTop = followed.scrollHeight;
  if (view) renderRun(view);
  connect();
}

let skeleton = null;

function renderRun(v) {
  view = v;
  const l = v.loop;
  if (!skeleton) {
    const parts = {};
    for (const p of ['title', 'facts', 'step', 'q', 'acts', 'chart', 'board', 'timeline', 'sessions']) parts[p] = el('div', { class: p });
    followed = el('pre', { class: 'transcript', id: 'transcript' });
    skeleton = parts;
    document.getElementById('main').replaceChildren(
      parts.title, parts.facts, parts.step, parts.q,
      el('div', { class: 'card' }, parts.acts, controls(l)),
      el('h2', {}, 'Cost over time'), parts.chart, parts.board,
      el('h2', {}, 'Timeline'), parts.timeline,
      el('h2', {}, 'Sessions'), parts.sessions, followed);
  }
  const p = skeleton;
  put(p.title, JSON.stringify([l.name, l.state]), () => el('h1', {}, l.name, ' ', stateSpan(l)));
  put(p.facts, JSON.stringify([l.spec, l.cost_usd, l.tokens, l.iteration, l.max_iterations, l.agent, l.last_activity, l.worker, l.branch]), () => facts(l));
  put(p.step, l.step || '', () => (l.step ? 'Next step: ' + l.step : ''));
  put(p.q, JSON.stringify([l.question, l.waiting]), () => question(l));
  put(p.acts, JSON.stringify([l.pid, l.run_id, l.state]), () => actions(l));
  put(p.chart, JSON.stringify(v.costs), () => chart(v.costs));
  put(p.board, JSON.stringify(v.board), () => board(v.board));
  put(p.timeline, JSON.stringify(v.timeline), () => el('ul', { class: 'timeline' }, v.timeline.slice().reverse().map((e) =>
    el('li', { class: e.bad ? 'bad' : '' }, el('span', { class: 'dim' }, when(e.at)), el('span', { class: 'kind' }, e.kind),
      el('span', { class: 'text' }, e.worker ? e.worker + ': ' : '', e.text)))));
  put(p.sessions, JSON.stringify([v.sessions, shown && shown.n]), () => el('div', { class: 'sessions' },
    v.sessions.map((s) => el('button', { type: 'button', 'data-n': String(s.n), class: shown && shown.n === s.n ? 'on' : '', on: { click: () => { picked = true; showSession(s.n); } } },
      (s.review ? 'review ' : 'session ') + s.n + (s.outcome ? ' · ' + s.outcome : ' · running')))));
  const newest = v.sessions.length ? v.sessions[v.sessions.length - 1].n : null;
  if (newest !== null && (!shown || (!picked && shown.n !== newest))) showSession(newest);
}

async function loadRun() {
  const r = await fetch('/api/loop/' + here, { credentials: 'same-origin' });
  if (!r.ok) {
    const v = await r.json().catch(() => ({}));
    document.getElementById('main').replaceChildren(el('p', { class: 'dim' }, v.error || 'no such loop'));
    return;
  }
  renderRun(await r.json());
}

let source = null;
function connect() {
  if (source) source.close();
  let url = '/events';
  if (here && shown) url += '?loop=' + here + '&session=' + shown.n + '&from=' + shown.end;
  source = new EventSource(url);
  const live = document.getElementById('live');
  source.onopen = () => { live.textContent = 'live'; };
  // Reconnected by hand, from where the transcript got to.
  source.onerror = () => {
    live.textContent = 'reconnecting…';
    source.close();
    setTimeout(connect, 2000);
  };
  source.addEventListener('loops', (e) => {
    const o = JSON.parse(e.data);
    live.textContent = 'live · ' + new Date().toLocaleTimeString();
    if (!here) return renderList(o);
    const l = o.projects.flatMap((p) => p.loops).find((x) => x.id === here);
    const now = JSON.stringify(l || null);
    if (now !== lastLoop) { lastLoop = now; loadRun(); }
  });
  source.addEventListener('lines', (e) => {
    const d = JSON.parse(e.data);
    if (!followed || !shown || d.n !== shown.n) return;
    shown.end = d.end;
    if (!d.lines.length) return;
    const end = followed.scrollTop + followed.clientHeight >= followed.scrollHeight - 8;
    followed.append(document.createTextNode(d.lines.join('\n') + '\n'));
    if (end) followed.scrollTop = followed.scrollHeight;
  });
}

if (here && !ID.test(here)) {
  document.getElementById('main').replaceChildren(el('p', { class: 'dim' }, 'No such loop.'));
} else {
  connect();
}
