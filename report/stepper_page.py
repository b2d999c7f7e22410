"""The step-through page's fixed parts (stepper.py fills in the data): its skeleton, style and
script. The script is all there is to the page's behaviour and is kept small (a test holds it
under 300 lines): it draws one step's state from the embedded JSON, highlights the parts named in
that step's `changed`, and steps with the buttons, the arrow keys, Home/End or a click on a step.

Test hooks in the URL fragment, read once on load: `#step=N` opens step N; `#do=RRnpL` then
presses ArrowRight (R) and ArrowLeft (L) and clicks forward (n) and back (p), through the same
handlers a person uses, and records the steps it passed in `data-trail` on <body>. <body>'s
`data-step` is always the step shown."""

SKELETON = """
<header><h1 id="title"></h1><p id="about"></p><p id="verdict"></p></header>
<nav id="controls"><button id="first" title="first step (Home)">&laquo; first</button>
<button id="prev" title="back one step (left arrow)">&#x25C0; back</button><span id="counter"></span>
<button id="next" title="forward one step (right arrow)">forward &#x25B6;</button>
<button id="last" title="last step (End)">last &raquo;</button>
<span class="dim">&larr; &rarr; step, Home/End jump, or click a step</span></nav>
<div id="main"><div id="steps"></div><div id="view"></div></div>
<noscript>This page draws the replay with a small inline script: allow scripts for this file.</noscript>
"""

STYLE = """
body { font-family: sans-serif; margin: 1em 1.5em; color: #222; font-size: 14px; }
h1 { font-size: 20px; margin: 0 0 .3em; } h3 { margin: .8em 0 .3em; font-size: 15px; }
.dim { color: #777; } .bad { color: #b03a2e; } .ok { color: #1e8449; }
nav { position: sticky; top: 0; background: #fff; padding: .4em 0; border-bottom: 1px solid #ddd; z-index: 5; }
nav button { font-size: 14px; padding: 2px 10px; } #counter { display: inline-block; min-width: 9em; text-align: center; font-weight: bold; }
#main { display: flex; gap: 1.2em; align-items: flex-start; margin-top: .6em; }
#steps { flex: 0 0 300px; max-height: 85vh; overflow-y: auto; font: 12px monospace; border-right: 1px solid #ddd; }
#steps div { padding: 2px 4px; cursor: pointer; border-left: 4px solid transparent; }
#steps div.cur { background: #d6eaf8; border-left-color: #2874a6; } #steps div.viol { color: #a04000; }
#steps div.hit { border-left-color: #c0392b; font-weight: bold; } #steps .n { display: inline-block; width: 2.5em; color: #888; }
.badge { background: #c0392b; color: #fff; border-radius: 3px; padding: 0 4px; margin-left: 4px; font-size: 11px; }
.badge.loop { background: #7d3c98; } .badge.other { background: #ca6f1e; }
#view { flex: 1; min-width: 0; }
.action { font: bold 15px monospace; } .changes { background: #fef9e7; padding: 4px 8px; margin: 4px 0; font-size: 13px; }
.v { background: #fdedec; border-left: 4px solid #e6b0aa; padding: 3px 8px; margin: 3px 0; font-size: 13px; }
.v.hit { background: #f5b7b1; border-left-color: #c0392b; }
.panels { display: flex; flex-wrap: wrap; gap: .8em; }
.ctrl, .broker, .java, .cluster { border: 1px solid #bbb; border-radius: 5px; padding: 6px 9px; background: #fcfcfc; }
.broker { flex: 1 1 100%; } .broker.down { opacity: .55; background: #f2f3f4; }
.head > * { margin-right: .5em; } .f { margin: 4px 0; } .f > label { display: inline-block; width: 8.5em; color: #555; font-size: 12px; }
.chip { display: inline-block; border: 1px solid #888; border-radius: 9px; padding: 0 6px; margin-right: 3px; font-size: 12px; background: #fff; }
.chip.master { background: #2874a6; color: #fff; } .chip.lingering { border-style: dashed; color: #777; }
.tag { font-size: 12px; background: #eee; border-radius: 3px; padding: 0 4px; } .tag.warn { background: #f9e79f; }
.role { font-weight: bold; padding: 1px 6px; border-radius: 3px; color: #fff; background: #7f8c8d; }
.role.MASTER { background: #2874a6; } .role.SLAVE { background: #58d68d; color: #222; } .role.NONE { background: #e67e22; }
.role.down { background: #555; }
.chg { outline: 2px solid #f1c40f; outline-offset: 1px; } .f.chg, .msg.chg { background: #fef5d4; } .cell.new { outline: 2px solid #d35400; z-index: 2; }
.scroll { overflow-x: auto; padding-bottom: 2px; }
.log, .epochs, .code-log { position: relative; min-height: 22px; }
.cell { position: absolute; top: 0; width: 23px; height: 20px; border: 1px solid #999; border-left-color: #ddd;
  font: 10px/20px monospace; text-align: center; box-sizing: border-box; }
.cell.head { border-left: 2px solid #333; } .msg .cell, .code-log .cell { position: relative; display: inline-block; }
.mark { position: absolute; top: 0; border-left: 2px solid; z-index: 3; pointer-events: none; }
.mark span { position: absolute; bottom: 0; left: 2px; font-size: 10px; white-space: nowrap; background: #fffc; }
.mark.flushed { border-color: #117a65; color: #117a65; } .mark.confirm { border-color: #b03a2e; color: #b03a2e; }
.mark.reput { border-color: #6c3483; color: #6c3483; } .mark.ack { border-color: #1f618d; color: #1f618d; border-left-style: dotted; }
.epoch { position: absolute; top: 0; height: 16px; font-size: 10px; line-height: 16px; padding-left: 3px;
  border: 1px solid #666; box-sizing: border-box; overflow: hidden; }
.msgs { display: flex; flex-wrap: wrap; gap: 6px; } .msg { border: 1px solid #ccc; border-radius: 4px; padding: 3px 6px; font-size: 12px; }
.msg > * { margin-right: 4px; vertical-align: middle; }
.status { font-weight: bold; border-radius: 3px; padding: 0 4px; background: #ddd; }
.status.PUT_OK { background: #82e0aa; } .status.PENDING { background: #f9e79f; } .status.FLUSH_SLAVE_TIMEOUT { background: #f5b041; }
.status.NO_RESPONSE { background: #d7bde2; } .status.IN_SYNC_REPLICAS_NOT_ENOUGH { background: #f1948a; }
.held span { display: inline-block; font-size: 10px; padding: 0 3px; margin-left: 1px; border-radius: 2px; }
.held .on { background: #2e86c1; color: #fff; } .held .off { background: #fff; color: #aaa; border: 1px dashed #aaa; }
table { border-collapse: collapse; font-size: 12px; margin: 4px 0; } td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
td.bad { background: #f5b7b1; } .legend { font-size: 12px; color: #555; margin-top: 1em; }
"""

SCRIPT = r"""
(() => {
'use strict';
const D = JSON.parse(document.getElementById('replay-data').textContent);
const W = 24;  // pixels a log cell: offsets come as cell positions
const PALETTE = ['#85c1e9', '#f8c471', '#82e0aa', '#c39bd3', '#f1948a', '#76d7c4', '#f7dc6f', '#b2babb'];
const colour = e => e > 0 ? PALETTE[(e - 1) % PALETTE.length] : '#eaecee';
const last = D.steps.length - 1;
const list = document.getElementById('steps'), view = document.getElementById('view');
let at = 0, changed = new Set();
const unshown = [];  // step:key of every change no drawn part highlighted (a test reads it)

function el(tag, cls, text, title) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined && text !== null) n.textContent = String(text);
  if (title) n.title = title;
  return n;
}
// A drawn part, named by its data keys; highlighted when this step changed one of them.
function k(node, keys) {
  node.dataset.k = keys.join(' ');
  if (keys.some(key => changed.has(key))) node.classList.add('chg');
  return node;
}
function field(label, keys, ...content) {
  const f = k(el('div', 'f'), keys);
  f.append(el('label', null, label), ...content.filter(Boolean));
  return f;
}
function set(ids) {
  const s = el('span', 'set');
  ids.forEach(i => s.append(el('span', 'chip', 'b' + i)));
  if (!ids.length) s.append(el('span', 'dim', 'empty '));
  return s;
}
function cell(label, epoch, cls, title) {
  const c = el('span', 'cell ' + (cls || ''), label, title);
  c.style.background = colour(epoch);
  return c;
}

function mark(pos, lane, cls, label, title, key) {
  const m = k(el('div', 'mark ' + cls, null, title), [key]);
  m.style.left = pos * W + 'px';
  m.style.height = 34 + lane * 14 + 'px';
  m.append(el('span', null, label));
  return m;
}
function logRow(b, prev) {
  const lanes = [['flushed', 'flushed'], ['confirm', 'confirm'], ['reput', 'dispatched']];
  const acks = {};  // cell position -> slaves whose ack the master read (drawn on the master's log)
  b.conns.forEach(c => { if (c.ack.at !== null) (acks[c.ack.at] = acks[c.ack.at] || []).push(c); });
  const ends = [b.cells.length, ...lanes.map(([n]) => b[n].at || 0), ...Object.keys(acks).map(Number)];
  const log = k(el('div', 'log'), [`b${b.id}.cells`]);
  log.style.width = (Math.max(...ends) + 2) * W + 'px';
  log.style.height = 40 + lanes.length * 14 + 'px';
  b.cells.forEach(([m, part, e], i) => {
    const c = cell(part === 0 ? 'm' + m : '', e, part === 0 ? 'head' : '', `cell ${i}: message ${m}, part ${part}; written in epoch ${e}`);
    c.style.left = i * W + 'px';
    const p = prev && prev.cells[i];
    if (prev && (!p || p[0] !== m || p[1] !== part)) c.classList.add('new');
    log.append(c);
  });
  lanes.forEach(([n, label], lane) => {
    if (b[n].at !== null) log.append(mark(b[n].at, lane, n, label, `${label}: offset ${b[n].offset}`, `b${b.id}.${n}`));
  });
  for (const [pos, cs] of Object.entries(acks)) {
    log.append(mark(Number(pos), lanes.length, 'ack', 'ack ' + cs.map(c => 'b' + c.slave).join(','),
      cs.map(c => `broker ${c.slave}'s ack: offset ${c.ack.offset}`).join('; '), `b${b.id}.conns`));
  }
  const wrap = el('div', 'scroll');
  wrap.append(log);
  return wrap;
}
function epochRow(b, entries, key) {
  const row = el('div', 'epochs');
  const end = Math.max(b.cells.length, ...entries.map(x => x[1] || 0));
  entries.forEach(([e, start, offset], i) => {
    const to = i + 1 < entries.length ? entries[i + 1][1] : end;
    const bar = el('span', 'epoch', (to - start) * W >= 18 ? 'e' + e : '', `epoch ${e} from offset ${offset}`);
    bar.style.left = start * W + 'px';
    bar.style.width = Math.max((to - start) * W, 4) + 'px';
    bar.style.background = colour(e);
    row.append(bar);
  });
  row.style.width = (end + 2) * W + 'px';
  const chips = el('span', 'dim', ' ' + (entries.map(([e, , o]) => `e${e}@${o}`).join('  ') || 'no entries'));
  return [row, chips];
}

function broker(b, prev, s) {
  const id = `b${b.id}`, box = el('div', 'broker' + (b.up ? '' : ' down'));
  box.dataset.b = b.id;
  const head = el('div', 'head');
  const flags = [b.fenced && 'fenced: no role confirmed', b.promoting && 'promoting to epoch ' + b.promoting].filter(Boolean);
  head.append(el('b', null, 'broker ' + b.id), k(el('span', 'role ' + b.role, b.role), [id + '.role', id + '.up']),
    k(el('span', 'tag' + (flags.length ? ' warn' : ''), flags.join(', ') || (b.up ? 'running' : 'stopped')), [id + '.fenced', id + '.promoting']));
  head.append(k(el('span', 'tag', 'masterEpoch ' + b.masterEpoch), [id + '.masterEpoch']));
  if (s.cut.includes(b.id)) head.append(el('span', 'tag warn', 'partitioned away'));
  if (s.offController.includes(b.id)) head.append(el('span', 'tag warn', 'controller path cut'));
  box.append(head);
  box.append(field('SyncStateSet', [id + '.sss', id + '.sssEpoch', id + '.proposing', id + '.queuedAlters'], set(b.sss),
    el('span', 'dim', '@' + b.sssEpoch), b.proposing && el('span', 'tag warn', 'proposing {' + b.proposing.join(',') + '}'),
    b.queuedAlters.length ? el('span', 'dim', ' queued: ' + b.queuedAlters.map(a => '{' + a + '}').join(' ')) : null));
  const size = `${b.cells.length} cells, ends at offset ${b.end}` + (b.up ? '' : ' (what is on disk)');
  box.append(field('commit log', ['end', 'flushed', 'confirm', 'reput'].map(n => `${id}.${n}`), el('span', 'dim', size),
    logRow(b, prev)));
  const [row, chips] = epochRow(b, b.up ? b.epochs : (b.disk || b.epochs));
  const epochs = field('epoch file', [id + '.epochs', id + '.disk', id + '.lastEnd'], chips);
  const wrap = el('div', 'scroll');
  wrap.append(row);
  epochs.append(wrap);
  if (b.up && b.disk) epochs.append(el('div', 'dim', 'on disk: ' + b.disk.map(([e, , o]) => `e${e}@${o}`).join('  ')));
  box.append(epochs);
  const ha = [];
  b.conns.forEach(c => ha.push(el('span', 'chip' + (c.lingering ? ' lingering' : ''),
    `\u2192 b${c.slave} ack ${c.ack.at ?? '-'} next ${c.next.at ?? '-'} e${c.epoch}` + (c.learner ? ' learner' : '') + (c.lingering ? ' lingering' : ''),
    `master's connection to broker ${c.slave}: ack offset ${c.ack.offset}, next transfer from ${c.next.offset}, transfer epoch ${c.epoch}`)));
  if (b.client) ha.push(el('span', 'chip', `client ${b.client.state} \u2190 b${b.client.master}, received e${b.client.receivedEpoch}`
    + (b.client.ack ? `, ack ${b.client.ack.at} unread` : '')));
  box.append(field('HA', [id + '.conns', id + '.client'], ...(ha.length ? ha : [el('span', 'dim', 'no connection')])));
  box.append(field('puts waiting', [id + '.puts'], ...b.puts.map(p => el('span', 'chip', `m${p.msg} needs acks to cell ${p.until.at}`
    + (p.needAck < 0 ? ' from every member' : ` from ${p.needAck}`) + `, until t=${p.deadline}`)), b.puts.length ? null : el('span', 'dim', 'none')));
  box.append(field('consumer offsets', [id + '.consumerOffsets'],
    el('span', 'dim', b.consumerOffsets.map((o, q) => `queue ${q}: ${o}`).join(', '))));
  return box;
}

function controller(s) {
  const c = s.ctrl, box = el('div', 'ctrl');
  box.append(el('b', null, 'controller'));
  box.append(field('master', ['ctrl.master'], c.master === null ? el('span', 'dim', 'none') : el('span', 'chip master', 'b' + c.master)));
  box.append(field('masterEpoch', ['ctrl.masterEpoch'], el('b', null, c.masterEpoch)));
  box.append(field('SyncStateSet', ['ctrl.sss', 'ctrl.sssEpoch'], set(c.sss), el('span', 'dim', '@' + c.sssEpoch)));
  box.append(field('registered', ['ctrl.brokerIds'], set(c.brokerIds)));
  box.append(field('unapplied', ['ctrl.unapplied'], el('span', c.unapplied ? 'tag warn' : 'dim', c.unapplied + ' committed events')));
  box.append(field('time', ['now'], el('span', null, 't=' + s.now)));
  box.append(field('partition', ['cut'], s.cut.length ? set(s.cut) : el('span', 'dim', 'none')));
  if (s.offController.length) box.append(field('controller path cut', ['offController'], set(s.offController)));
  return box;
}

function messages(s) {
  const box = el('div', 'msgs');
  s.messages.forEach(m => {
    const card = k(el('div', 'msg'), ['m' + m.id]);
    card.append(cell('m' + m.id, m.epoch, 'head', `message ${m.id}: ${m.cells} cells at cell ${m.at} (offset ${m.offset})`),
      el('span', 'status ' + m.status, m.status === 'PENDING' ? 'pending' : m.status),
      el('span', 'dim', `q${m.queue}/${m.queueOffset}, by b${m.writer} in e${m.epoch}`));
    const held = el('span', 'held', 'on ', 'which brokers hold it');
    s.brokers.forEach(b => held.append(el('span', m.heldBy.includes(b.id) ? 'on' : 'off', 'b' + b.id)));
    card.append(held);
    if (m.readFrom !== null) card.append(el('span', 'tag', 'read from b' + m.readFrom));
    box.append(card);
  });
  s.refused.forEach(r => {
    const card = k(el('div', 'msg'), ['refused']);
    card.append(el('span', 'status ' + r.status, `send to b${r.broker} refused: ${r.status}`));
    box.append(card);
  });
  if (!s.messages.length && !s.refused.length) box.append(el('span', 'dim', 'no message sent yet'));
  return box;
}

function java() {
  if (!D.java) return D.javaNote ? el('p', 'dim', D.javaNote) : null;
  const box = el('div', 'java');
  box.append(el('b', null, "RocketMQ's classes (replay --java): "));
  const rows = D.java[String(at)] || [];
  if (!rows.length) box.append(el('span', 'dim', 'no call at this step'));
  rows.forEach(r => {
    const line = el('div', r.verdict.startsWith('DIFFERS') ? 'bad' : r.verdict.startsWith('confirmed') ? 'ok' : 'dim');
    line.append(el('b', null, r.verdict), el('span', 'dim', ` ${r.what}` + (r.methods.length ? ': ' + r.methods.join(', ') : '')));
    r.diffs.forEach(d => line.append(el('div', 'bad', d)));
    if (r.modelOnly) line.append(el('div', 'dim', 'outside the loaded classes: ' + r.modelOnly));
    box.append(line);
  });
  return box;
}

function side(v) {
  if (v === 'down') return el('span', 'role down', 'down');
  if (Array.isArray(v) && v.every(x => typeof x === 'string')) {
    const row = el('span', 'code-log');
    v.forEach(m => row.append(cell(m, 0, 'head')));
    return v.length ? row : el('span', 'dim', 'none');
  }
  return el('span', null, v === null ? '-' : typeof v === 'string' ? v : JSON.stringify(v));
}
function cluster() {
  if (!D.cluster) return null;
  const r = D.cluster[String(at)], box = el('div', 'cluster');
  box.append(el('b', null, "RocketMQ's running code beside the model (replay --cluster)"));
  if (!r) { box.append(el('p', 'dim', 'no cluster row for this step')); return box; }
  box.append(el('p', r.differences.length ? 'bad' : 'ok', `${r.kind}: ${r.did || ''} \u2014 ` +
    (r.differences.length ? 'differs: ' + r.differences.join('; ') : 'the same') + (r.settled ? '' : ' (not quiet: may not repeat)')));
  const t = el('table'), hdr = el('tr');
  ['', 'field', 'model', 'cluster'].forEach(h => hdr.append(el('th', null, h)));
  t.append(hdr);
  const add = (who, f, m, c) => {
    const tr = el('tr'), same = JSON.stringify(m) === JSON.stringify(c);
    tr.append(el('td', null, who), el('td', null, f));
    [m, c].forEach(v => { const td = el('td', same ? '' : 'bad'); td.append(side(v)); tr.append(td); });
    t.append(tr);
  };
  for (const [b, m] of Object.entries(r.model.brokers)) {
    const c = r.code.brokers[b];
    if (m === 'down' || c === 'down' || !c) { add('broker ' + b, 'up', m === 'down' ? 'down' : 'up', c === 'down' || !c ? 'down' : 'up'); continue; }
    Object.keys(m).forEach(f => add('broker ' + b, f, m[f], c[f]));
  }
  Object.keys(r.model.controller).forEach(f => add('controller', f, r.model.controller[f], r.code.controller[f]));
  box.append(t);
  return box;
}

function show(i) {
  at = Math.max(0, Math.min(last, i));
  const st = D.steps[at], prev = at ? D.steps[at - 1].state : null;
  changed = new Set(st.changed);
  [...list.children].forEach((li, j) => li.classList.toggle('cur', j === at));
  list.children[at].scrollIntoView({block: 'nearest'});
  document.getElementById('counter').textContent = `step ${at} of ${last}`;
  const parts = [el('div', 'action', at ? `${at}. ${st.action}` : st.action)];
  parts.push(el('div', 'changes', st.changes ? 'changed: ' + st.changes : (at ? 'nothing drawn changed' : 'where the steps start')));
  st.violations.forEach(v => {
    const here = D.hit && D.hit.step === at && v.id === D.hit.invariant;
    const row = el('div', 'v' + (here ? ' hit' : ''));
    row.dataset.invariant = v.id;
    row.append(el('b', null, (here ? 'breaks here: ' : '') + `${v.id} ${v.name}`), el('span', null, ': ' + v.message),
      el('span', 'dim', v.promised ? '' : ' (not promised by this configuration)'));
    parts.push(row);
  });
  parts.push(java());
  const panels = el('div', 'panels');
  panels.append(controller(st.state), ...st.state.brokers.map((b, j) => broker(b, prev && prev.brokers[j], st.state)));
  parts.push(el('h3', null, 'state after this step'), panels, el('h3', null, 'messages and what the client was told'), messages(st.state), cluster());
  parts.push(el('p', 'legend', 'Cells: one per model byte, coloured by the epoch their writer wrote them in; m<N> starts message N. ' +
    'Marks: flushed, confirm(Offset), dispatched (reput) and the acks the master read. Yellow: changed by this step; ' +
    'orange outline: a cell new or overwritten. Epoch file: each entry from its start offset. Steps in orange: some ' +
    'invariant is violated after them (promised or not); \u2717 marks where the file\'s invariant breaks.'));
  view.replaceChildren(...parts.filter(Boolean));
  const shown = new Set([...view.querySelectorAll('.chg')].flatMap(n => n.dataset.k.split(' ')));
  unshown.push(...st.changed.filter(key => !shown.has(key)).map(key => `${at}:${key}`));
  document.body.dataset.unshown = unshown.join(' ');
  document.body.dataset.step = at;
}

document.getElementById('title').textContent = D.file + (D.invariant ? `: ${D.invariant} ${D.invariantName}` : '');
const toggles = D.snapshot ? `the snapshot's ${D.toggles.length} known defects` : D.toggles.join(', ') || 'none (the intended baseline)';
document.getElementById('about').textContent = `${D.config}; toggles: ${toggles}` + (D.note ? ` \u2014 ${D.note}` : '');
document.getElementById('about').title = D.toggles.join(', ');
document.getElementById('verdict').textContent = D.hit ? `${D.hit.invariant} ${D.hit.name} breaks at step ${D.hit.step}`
  : D.loop !== null ? `a lasso: steps ${D.loop}-${last} repeat forever and ${D.invariant} never holds` : 'no promised invariant breaks';
D.steps.forEach((st, i) => {
  const li = el('div', st.violations.length ? 'viol' : '', null, st.changes);
  li.append(el('span', 'n', i), el('span', null, st.action));
  if (D.hit && D.hit.step === i) { li.classList.add('hit'); li.append(el('span', 'badge', '\u2717 ' + D.hit.invariant)); }
  if (D.loop === i) li.append(el('span', 'badge loop', 'loop'));
  if (D.java && (D.java[String(i)] || []).some(r => r.diffs.length)) li.append(el('span', 'badge other', 'java \u2260'));
  if (D.cluster && D.cluster[String(i)] && D.cluster[String(i)].differences.length) li.append(el('span', 'badge other', 'code \u2260'));
  li.addEventListener('click', () => show(i));
  list.append(li);
});
const buttons = {first: () => 0, prev: () => at - 1, next: () => at + 1, last: () => last};
for (const [b, to] of Object.entries(buttons)) document.getElementById(b).addEventListener('click', () => show(to()));
document.addEventListener('keydown', e => {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const to = {ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: last}[e.key];
  if (to !== undefined) { e.preventDefault(); show(to); }
});

const hook = new URLSearchParams(location.hash.slice(1)), trail = [];
show(Number(hook.get('step')) || 0);
for (const c of hook.get('do') || '') {
  if (c === 'R' || c === 'L') document.dispatchEvent(new KeyboardEvent('keydown', {key: c === 'R' ? 'ArrowRight' : 'ArrowLeft', bubbles: true}));
  else if (c === 'n' || c === 'p') document.getElementById(c === 'n' ? 'next' : 'prev').click();
  trail.push(at);
}
document.body.dataset.trail = trail.join(',');
})();
"""
