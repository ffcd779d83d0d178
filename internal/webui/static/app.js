// The search page: one search box (query.js), counts as a bar chart
// (chart.js), results as the view's Tables with a live watch, and an
// object's YAML, Events and history (history.js). Everything members hold
// is untrusted and reaches the DOM as text only.
import { terms, parse, filterWord, addWord } from './query.js';
import {
  tableAccept, viewName, acrossClusters, viewURL, hostURL, collectionURL, getJSON, watch, findResource, resourcePath, RequestError,
} from './api.js';
import { drawCounts } from './chart.js';
import { versions, toYAML, renderDiff } from './history.js';

// pageSize rows come per request; at most windowSize are in the DOM at
// once, however many are loaded, so 100k matches cost a scroll, not a
// page the browser cannot lay out.
const pageSize = 100, windowSize = 200, defaultKind = 'pods';

const $ = (id) => document.getElementById(id);
const q = $('q'), asOf = $('as-of'), groupBy = $('group-by'), status = $('status');

const state = {
  run: null, // AbortController of the current search
  resource: null, // the resource of the results (discovery's)
  columns: [], // the Table's columns shown
  rows: [], // loaded rows: {key, cells, meta}
  continue: '',
  remaining: 0, // remainingItemCount of the last page
  listURL: null,
  selected: -1,
  windowStart: 0,
};

let searches = 0;

function setStatus(text, phase) {
  status.textContent = text;
  status.dataset.phase = phase;
}

// searched marks a search finished (body's data-searched counts them), so
// that whoever drives the page knows when its answer is on screen.
function searched(text, phase) {
  setStatus(text, phase);
  document.body.dataset.searched = String(++searches);
}

function text(tag, value, attrs = {}) {
  const e = document.createElement(tag);
  e.textContent = value === undefined || value === null ? '' : String(value);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// --- the search -----------------------------------------------------------

function readHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  q.value = h.get('q') || '';
  asOf.value = h.get('asOf') || '';
  if (h.get('groupBy')) setGroupBy(h.get('groupBy'));
}

function writeHash() {
  const h = new URLSearchParams();
  if (q.value) h.set('q', q.value);
  if (asOf.value) h.set('asOf', asOf.value);
  h.set('groupBy', groupBy.value);
  history.replaceState(null, '', '#' + h.toString());
}

function setGroupBy(term) {
  if (![...groupBy.options].some((o) => o.value === term)) groupBy.append(new Option(term, term));
  groupBy.value = term;
}

async function search() {
  if (state.run) state.run.abort();
  const run = new AbortController();
  state.run = run;
  writeHash();
  const query = parse(q.value);
  if (query.groupBy) setGroupBy(query.groupBy);
  if (asOf.value.trim()) query.params.set('asOf', asOf.value.trim());
  closeDetail();
  state.rows = [];
  state.selected = -1;
  state.windowStart = 0;
  state.continue = '';
  state.remaining = 0;
  $('live').textContent = '';
  $('chart').replaceChildren();
  renderRows();
  if (query.unknown.length) {
    searched(`Not understood: ${query.unknown.join(' ')} (see Search syntax)`, 'error');
    return;
  }
  setStatus('Searching…', 'loading');
  try {
    let listURL;
    if (query.collection) {
      listURL = collectionURL(query.collection);
      if (!acrossClusters && !query.params.has('clusters')) query.params.set('clusters', viewName);
      state.resource = null;
    } else {
      const r = await findResource(query.kind || defaultKind);
      if (!r) throw new RequestError(404, `this view serves no resource "${query.kind}"`);
      state.resource = r;
      listURL = viewURL(resourcePath(r, ''));
    }
    for (const [k, v] of query.params) listURL.searchParams.set(k, v);
    state.listURL = listURL;
    const counted = query.collection || query.params.has('asOf')
      ? Promise.resolve(showNoCounts(query.collection ? 'Counts are of one resource, not of collections.' : 'Counts are of the current revision; clear "as of" to see them.'))
      : loadCounts(listURL, run);
    const first = await loadPage(run);
    await counted;
    if (run.signal.aborted) return;
    searched(summary(), 'done');
    if (!query.collection && !query.params.has('asOf') && first) liveUpdates(listURL, first, run);
  } catch (err) {
    if (run.signal.aborted) return;
    searched(`Error: ${err.message}`, 'error');
  }
}

function summary() {
  const n = state.rows.length;
  return `${n} ${n === 1 ? 'object' : 'objects'} loaded${state.continue ? ', more to load' : ''}.`;
}

function showNoCounts(message) {
  $('chart').replaceChildren(text('p', message));
}

async function loadCounts(listURL, run) {
  const url = new URL(listURL);
  url.searchParams.delete('orderby');
  url.searchParams.set('groupBy', groupBy.value);
  url.searchParams.set('limit', '50');
  try {
    const counts = await getJSON(url, { signal: run.signal });
    if (run.signal.aborted) return;
    const term = groupBy.value;
    drawCounts($('chart'), counts, term, (value) => {
      const word = filterWord(term, value);
      if (!word) return;
      q.value = addWord(q.value, word);
      search();
    });
  } catch (err) {
    if (!run.signal.aborted) showNoCounts(`Counts: ${err.message}`);
  }
}

// loadPage loads the next page of the list and returns its Table (or
// list), undefined when aborted. With reveal, the window moves to the
// first row loaded, which is selected.
async function loadPage(run, reveal = false) {
  const first = state.rows.length;
  const url = new URL(state.listURL);
  url.searchParams.set('limit', String(pageSize));
  if (state.continue) url.searchParams.set('continue', state.continue);
  const body = await getJSON(url, { accept: state.resource ? tableAccept : 'application/json', signal: run.signal });
  if (run.signal.aborted) return undefined;
  if (body.kind === 'Table') {
    if (body.columnDefinitions && state.rows.length === 0) state.columns = tableColumns(body.columnDefinitions);
    for (const row of body.rows || []) state.rows.push(tableRow(row));
  } else {
    state.columns = listColumns;
    for (const obj of body.items || []) state.rows.push(objectRow(obj));
  }
  state.continue = (body.metadata && body.metadata.continue) || '';
  state.remaining = (body.metadata && body.metadata.remainingItemCount) || 0;
  if (reveal && state.rows.length > first) {
    state.selected = first;
    state.windowStart = windowAround(first);
  }
  renderRows();
  return body;
}

// The Table's columns kubectl shows (priority 0), with NAMESPACE after
// CLUSTER as kubectl get -A adds it.
function tableColumns(defs) {
  const cols = [];
  defs.forEach((d, i) => { if (!d.priority) cols.push({ title: d.name.toUpperCase(), cell: i }); });
  if (!state.resource || state.resource.namespaced) {
    const at = cols[0] && cols[0].title === 'CLUSTER' ? 1 : 0;
    cols.splice(at, 0, { title: 'NAMESPACE', meta: 'namespace' });
  }
  return cols;
}

const listColumns = [
  { title: 'CLUSTER', meta: 'cluster' }, { title: 'NAMESPACE', meta: 'namespace' },
  { title: 'KIND', meta: 'kind' }, { title: 'NAME', meta: 'name' },
];

function rowMeta(obj) {
  const md = (obj && obj.metadata) || {};
  const cluster = (md.annotations && md.annotations['panorama.io/cluster']) || (acrossClusters ? '' : viewName);
  return { name: md.name || '', namespace: md.namespace || '', uid: md.uid || '', cluster, kind: obj.kind || '', apiVersion: obj.apiVersion || '' };
}

function tableRow(row) {
  const meta = rowMeta(row.object);
  return { key: `${meta.cluster}/${meta.namespace}/${meta.name}`, cells: row.cells, meta };
}

function objectRow(obj) {
  const meta = rowMeta(obj);
  return { key: `${meta.cluster}/${meta.kind}/${meta.namespace}/${meta.name}`, cells: [], meta };
}

// liveUpdates watches the list from the revision it was read at and keeps
// the loaded rows current: modified rows change in place, deleted ones go,
// and new ones are added once every page is loaded.
async function liveUpdates(listURL, first, run) {
  const url = new URL(listURL);
  url.searchParams.set('watch', 'true');
  url.searchParams.set('allowWatchBookmarks', 'true');
  if (first.metadata && first.metadata.resourceVersion) url.searchParams.set('resourceVersion', first.metadata.resourceVersion);
  $('live').textContent = 'live';
  try {
    await watch(url, {
      accept: tableAccept, signal: run.signal,
      onEvent: (ev) => {
        if (ev.type === 'BOOKMARK') return;
        if (ev.type === 'ERROR') throw new RequestError(ev.object.code, ev.object.message);
        const table = ev.object;
        for (const row of table.rows || []) applyEvent(ev.type, tableRow(row));
        renderRows();
        setStatus(summary(), 'done');
      },
    });
  } catch (err) {
    if (run.signal.aborted) return;
    $('live').textContent = `not live: ${err.message}`;
    return;
  }
  if (!run.signal.aborted) $('live').textContent = 'not live: the watch ended (search again)';
}

function applyEvent(type, row) {
  const i = state.rows.findIndex((r) => r.key === row.key);
  if (type === 'DELETED') {
    if (i >= 0) state.rows.splice(i, 1);
  } else if (i >= 0) {
    state.rows[i] = row;
  } else if (type === 'ADDED' && !state.continue) {
    state.rows.push(row);
  }
}

// --- the results, a window of the loaded rows ------------------------------

function renderRows() {
  const thead = $('result-table').tHead, tbody = $('result-table').tBodies[0];
  const head = document.createElement('tr');
  for (const c of state.columns) head.append(text('th', c.title, { scope: 'col' }));
  thead.replaceChildren(head);
  const start = state.windowStart, end = Math.min(state.rows.length, start + windowSize);
  const trs = [];
  for (let i = start; i < end; i++) {
    const row = state.rows[i];
    const tr = document.createElement('tr');
    tr.dataset.index = String(i);
    tr.tabIndex = i === Math.max(state.selected, start) ? 0 : -1;
    if (i === state.selected) tr.setAttribute('aria-selected', 'true');
    for (const c of state.columns) tr.append(text('td', c.meta ? row.meta[c.meta] : formatCell(row.cells[c.cell])));
    trs.push(tr);
  }
  tbody.replaceChildren(...trs);
  $('window-info').textContent = state.rows.length > windowSize ? `Rows ${start + 1}–${end} of ${state.rows.length} loaded (arrows, Page Up/Down move).` : '';
  $('load-more').hidden = !state.continue;
  const n = state.rows.length;
  $('result-count').textContent = state.remaining ? `(${n} of ${n + state.remaining})` : `(${n}${state.continue ? '+' : ''})`;
}

function formatCell(v) {
  if (v === null || v === undefined) return '<none>';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function select(i, focus = true) {
  if (state.rows.length === 0) return;
  i = Math.max(0, Math.min(state.rows.length - 1, i));
  state.selected = i;
  const tbody = $('result-table').tBodies[0];
  if (i < state.windowStart || i >= state.windowStart + windowSize) {
    state.windowStart = windowAround(i);
    renderRows();
  } else {
    markSelected(tbody, i);
  }
  const tr = tbody.querySelector(`tr[data-index="${i}"]`);
  if (tr && focus) { tr.focus(); tr.scrollIntoView({ block: 'nearest' }); }
}

// windowAround is the start of the window of rows shown around row i.
function windowAround(i) {
  return Math.max(0, Math.min(i - Math.floor(windowSize / 2), state.rows.length - windowSize));
}

// markSelected moves the selection within the window shown: two rows
// change, where drawing the window again would lay out all of its rows
// at every arrow key.
function markSelected(tbody, i) {
  const tr = tbody.querySelector(`tr[data-index="${i}"]`);
  if (!tr) { renderRows(); return; }
  for (const old of tbody.querySelectorAll('tr[tabindex="0"], tr[aria-selected]')) {
    old.tabIndex = -1;
    old.removeAttribute('aria-selected');
  }
  tr.tabIndex = 0;
  tr.setAttribute('aria-selected', 'true');
}

$('result-table').tBodies[0].addEventListener('keydown', (e) => {
  const tr = e.target.closest('tr');
  if (!tr) return;
  const i = Number(tr.dataset.index);
  const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: 20, PageUp: -20 };
  if (e.key in moves) { e.preventDefault(); select(i + moves[e.key]); }
  else if (e.key === 'Home') { e.preventDefault(); select(0); }
  else if (e.key === 'End') { e.preventDefault(); select(state.rows.length - 1); }
  else if (e.key === 'Enter') { e.preventDefault(); select(i); openDetail(state.rows[i]); }
});
$('result-table').tBodies[0].addEventListener('click', (e) => {
  const tr = e.target.closest('tr');
  if (!tr) return;
  const i = Number(tr.dataset.index);
  select(i);
  openDetail(state.rows[i]);
});

$('load-more').addEventListener('click', async () => {
  const run = state.run;
  if (!run) return;
  setStatus('Loading more…', 'loading');
  const first = state.rows.length;
  try {
    await loadPage(run, true);
    if (state.rows.length > first) select(first);
    setStatus(summary(), 'done');
  } catch (err) {
    if (!run.signal.aborted) setStatus(`Error: ${err.message}`, 'error');
  }
});

// --- an object: YAML, Events, history -------------------------------------

let detailRun = null;

function closeDetail() {
  if (detailRun) detailRun.abort();
  $('detail').hidden = true;
}

// objectPlace is where an object is read: its cluster's view when the page
// is across clusters (history is per cluster), this view otherwise.
function objectPlace(row) {
  const view = viewName === '_all' && row.meta.cluster ? row.meta.cluster : viewName;
  return { view, path: resourcePath(state.resource, row.meta.namespace) + '/' + encodeURIComponent(row.meta.name) };
}

async function openDetail(row) {
  if (!row || !state.resource) return;
  if (detailRun) detailRun.abort();
  const run = new AbortController();
  detailRun = run;
  const place = objectPlace(row);
  $('detail').hidden = false;
  $('detail-title').textContent = `${state.resource.kind} ${row.meta.namespace ? row.meta.namespace + '/' : ''}${row.meta.name}${row.meta.cluster ? ' in ' + row.meta.cluster : ''}`;
  $('pane-yaml').textContent = 'Loading…';
  $('events-table').tBodies[0].replaceChildren();
  $('timeline').replaceChildren();
  $('diff').replaceChildren();
  versionList = [];
  showTab('yaml');
  const yaml = getJSON(viewURL(place.path, place.view), { signal: run.signal }).then((obj) => {
    $('pane-yaml').textContent = toYAML(obj);
    return obj;
  }, (err) => { $('pane-yaml').textContent = `Error: ${err.message}`; });
  const obj = await yaml;
  if (run.signal.aborted) return;
  await Promise.all([loadEvents(place, row, obj, run), loadHistory(place, run)]);
  if (!run.signal.aborted) $('detail').dataset.loaded = place.view + '/' + place.path;
}

async function loadEvents(place, row, obj, run) {
  const tbody = $('events-table').tBodies[0];
  const uid = (obj && obj.metadata && obj.metadata.uid) || row.meta.uid;
  const path = (row.meta.namespace ? `api/v1/namespaces/${encodeURIComponent(row.meta.namespace)}/events` : 'api/v1/events');
  const url = viewURL(path, place.view);
  url.searchParams.set('fieldSelector', 'involvedObject.uid=' + uid);
  try {
    const list = await getJSON(url, { signal: run.signal });
    const trs = (list.items || []).map((ev) => {
      const tr = document.createElement('tr');
      const from = (ev.source && ev.source.component) || ev.reportingComponent || '';
      tr.append(text('td', ev.type), text('td', ev.reason), text('td', ev.lastTimestamp || ev.eventTime || ''), text('td', from), text('td', ev.message));
      return tr;
    });
    if (trs.length === 0) {
      const tr = document.createElement('tr');
      tr.append(text('td', 'No Events.', { colspan: '5' }));
      trs.push(tr);
    }
    tbody.replaceChildren(...trs);
  } catch (err) {
    if (run.signal.aborted) return;
    const tr = document.createElement('tr');
    tr.append(text('td', `Events: ${err.message}`, { colspan: '5' }));
    tbody.replaceChildren(tr);
  }
}

let versionList = [];

// historyVersions bounds the versions read, and so the timeline and the
// version pickers: a pod's status can change thousands of times a week.
// The rest are a click away.
const historyVersions = 100;

async function loadHistory(place, run, all = false) {
  const from = $('diff-from'), to = $('diff-to');
  const url = viewURL(place.path + '/history', place.view);
  if (!all) url.searchParams.set('limit', String(historyVersions));
  const more = $('history-more');
  more.hidden = true;
  try {
    const h = await getJSON(url, { signal: run.signal });
    versionList = versions(h.items || []);
  } catch (err) {
    if (run.signal.aborted) return;
    versionList = [];
    $('timeline').replaceChildren(text('li', `History: ${err.message}`));
    return;
  }
  more.hidden = all || versionList.length < historyVersions;
  if (!more.hidden) {
    const every = text('button', 'Show every version', { type: 'button' });
    every.addEventListener('click', () => loadHistory(place, run, true));
    more.replaceChildren(`The last ${historyVersions} versions. `, every);
  }
  const items = versionList.map((v, i) => {
    const li = document.createElement('li');
    const b = text('button', `${v.type} · revision ${v.revision} · ${v.time}`, { type: 'button' });
    b.dataset.index = String(i);
    b.addEventListener('click', () => { to.value = String(i); from.value = String(Math.max(0, i - 1)); showDiff(); });
    li.append(b);
    return li;
  });
  $('timeline').replaceChildren(...items);
  const options = () => versionList.map((v, i) => new Option(`revision ${v.revision} (${v.type})`, String(i)));
  from.replaceChildren(...options());
  to.replaceChildren(...options());
  to.value = String(versionList.length - 1);
  from.value = String(Math.max(0, versionList.length - 2));
  if (!$('pane-history').hidden) showDiff();
}

function showDiff() {
  const a = versionList[Number($('diff-from').value)], b = versionList[Number($('diff-to').value)];
  if (!a || !b) { $('diff').replaceChildren(); return; }
  renderDiff($('diff'), a.object ? toYAML(a.object) : '', b.object ? toYAML(b.object) : '');
  for (const btn of $('timeline').querySelectorAll('button')) {
    btn.setAttribute('aria-pressed', String(btn.dataset.index === $('diff-to').value || btn.dataset.index === $('diff-from').value));
  }
}
$('diff-from').addEventListener('change', showDiff);
$('diff-to').addEventListener('change', showDiff);

// showTab shows a tab's pane; the history's diff, the costly part, is
// drawn only when its pane is shown or other versions are picked.
function showTab(name) {
  for (const t of ['yaml', 'events', 'history']) {
    $('tab-' + t).setAttribute('aria-selected', String(t === name));
    $('tab-' + t).tabIndex = t === name ? 0 : -1;
    $('pane-' + t).hidden = t !== name;
  }
  if (name === 'history') showDiff();
}
const tabs = ['yaml', 'events', 'history'];
for (const t of tabs) $('tab-' + t).addEventListener('click', () => showTab(t));
$('tabs').addEventListener('keydown', (e) => {
  const i = tabs.findIndex((t) => $('tab-' + t).getAttribute('aria-selected') === 'true');
  const step = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
  if (!step) return;
  const next = tabs[(i + step + tabs.length) % tabs.length];
  showTab(next);
  $('tab-' + next).focus();
});

// --- clusters -----------------------------------------------------------

// showClusters lists the clusters the user may read: the host's Clusters
// when the user may list them, or else the clusters the view counts
// namespaces in (a tenant may read a cluster without listing Clusters).
async function showClusters() {
  const nav = $('clusters');
  if (!acrossClusters) return;
  let names;
  try {
    const list = await getJSON(hostURL('/apis/cluster.panorama.io/v1alpha1/clusters'));
    names = (list.items || []).map((c) => c.metadata.name);
  } catch {
    try {
      const url = viewURL('api/v1/namespaces');
      url.searchParams.set('groupBy', 'cluster');
      const counts = await getJSON(url);
      names = (counts.items || []).map((i) => i.group && i.group.cluster).filter(Boolean).sort();
    } catch {
      return;
    }
  }
  const buttons = names.map((name) => {
    const b = text('button', name, { type: 'button', title: `Search in ${name}` });
    b.addEventListener('click', () => { q.value = addWord(q.value, 'cluster:' + name); search(); });
    return b;
  });
  nav.replaceChildren(text('span', 'Clusters: '), ...buttons);
}

// --- start ----------------------------------------------------------------

function fillHelp() {
  const rows = terms.map((t) => {
    const tr = document.createElement('tr');
    tr.append(text('td', `${t.word}:…`), text('td', t.help));
    return tr;
  });
  const label = document.createElement('tr');
  label.append(text('td', 'app=web, tier!=db, !canary'), text('td', 'label requirements, as kubectl -l takes them'));
  $('help-table').tBodies[0].replaceChildren(...rows, label);
}

$('search').addEventListener('submit', (e) => { e.preventDefault(); search(); });
groupBy.addEventListener('change', () => search());
$('view-name').textContent = acrossClusters ? `(${viewName === '_flat' ? 'flat view' : 'all clusters'})` : `(cluster ${viewName})`;
fillHelp();
readHash();
showClusters();
search();
window.addEventListener('hashchange', () => { readHash(); search(); });
