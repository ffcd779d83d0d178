// bench.mjs times the search page in Debian's chromium as a user sees it,
// for browser_bench_test.go's BenchmarkSearchPage: each time runs from
// the user's input (or the navigation's start) to the frame that shows its
// answer, and each request the page made for it is replayed raw from node
// through the same proxy right after, as its baseline.
//
//   node bench.mjs plan.json
//
// plan: {url, out, query, groupBy, pages, runs}. The first run warms the
// server and the browser's caches and is not recorded.
import { readFileSync, writeFileSync } from 'node:fs';
import { launch } from './chromium.mjs';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
// page: the times the user waited; raw: the page's requests replayed;
// script, style, layout: the renderer's work in that time (ms, from
// Chromium's Performance metrics), where the rest is waiting; issued,
// answered: when the page's request for it started and ended (Resource
// Timing, from the same input).
const series = () => ({ page: [], raw: [], script: [], style: [], layout: [], issued: [], answered: [] });
const out = {
  open: series(), counts: series(), more: series(), end: series(), yaml: series(), detail: series(),
  domRows: [], domElements: [], loaded: [], heapOpen: [], heapPaged: [], counted: {}, consoleErrors: [],
  opening: [], // the last run's requests until the first page's, as Resource Timing saw them
};

// In the page, before its own scripts: the time of the last input, and
// painted(what, arg), which resolves once is[what](arg) holds with the
// time of the frame that shows it (checked at each frame; the timer runs
// after that frame is drawn).
function instrument() {
  const bench = { input: 0 };
  window.__bench = bench;
  for (const type of ['click', 'keydown']) addEventListener(type, (e) => { bench.input = e.timeStamp; }, true);
  const $ = (id) => document.getElementById(id);
  const loaded = () => Number((/\((\d+)/.exec(($('result-count') || {}).textContent || '') || [0, 0])[1]);
  const is = {
    rows: () => document.querySelectorAll('#result-table tbody tr').length > 0,
    bars: () => document.querySelectorAll('#chart .bar').length > 0,
    loaded: (n) => loaded() >= n && $('status').dataset.phase === 'done',
    selected: (i) => document.querySelector(`#result-table tbody tr[data-index="${i}"][aria-selected="true"]`) !== null,
    yaml: () => !$('detail').hidden && !['', 'Loading…'].includes($('pane-yaml').textContent),
    detail: () => Boolean($('detail').dataset.loaded),
  };
  bench.loaded = loaded;
  bench.painted = (what, arg) => new Promise((resolve) => {
    const check = () => {
      if (is[what](arg)) setTimeout(() => resolve(performance.now()), 0);
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  });
  // From the navigation's start, which performance.now() counts from.
  bench.open = { rows: bench.painted('rows'), bars: bench.painted('bars') };
}

// raw fetches the requests one after the other, each group's at once, and
// reads every answer whole: the page's requests without the page.
async function raw(...groups) {
  const start = performance.now();
  for (const group of groups) {
    await Promise.all(group.map(async (r) => {
      const resp = await fetch(r.url, { headers: { Accept: r.accept } });
      await resp.arrayBuffer();
      if (!resp.ok) throw new Error(`${r.url}: ${resp.status}`);
    }));
  }
  return performance.now() - start;
}

const path = (r) => new URL(r.url).pathname;
const param = (r, name) => new URL(r.url).searchParams.get(name);
const isList = (r) => path(r).endsWith('/api/v1/pods') && !param(r, 'watch') && !param(r, 'groupBy');

const { context, close } = await launch(['--enable-precise-memory-info']);
try {
  await context.addInitScript(instrument);
  for (let run = 0; run <= plan.runs; run++) {
    const record = async (s, [waited, work], request, rawMs) => {
      if (run === 0) return;
      s.page.push(waited);
      if (rawMs !== undefined) s.raw.push(rawMs);
      if (work) for (const k of ['script', 'style', 'layout']) s[k].push(work[k]);
      const t = request && await page.evaluate((url) => {
        const e = performance.getEntriesByName(url).pop();
        return e && [e.startTime - window.__bench.input, e.responseEnd - window.__bench.input];
      }, request.url);
      if (t) { s.issued.push(t[0]); s.answered.push(t[1]); }
    };
    const page = await context.newPage();
    page.setDefaultTimeout(120000);
    page.on('console', (m) => { if (m.type() === 'error') out.consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => out.consoleErrors.push(String(e)));
    const requests = [];
    page.on('request', (r) => requests.push({ url: r.url(), accept: r.headers().accept || 'application/json' }));
    const since = (i, pred) => {
      const found = requests.slice(i).filter(pred);
      if (found.length !== 1) throw new Error(`want one request, the page made ${JSON.stringify(found)}`);
      return found[0];
    };
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    const metrics = async () => Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
    const heap = async () => {
      await cdp.send('HeapProfiler.collectGarbage');
      return (await metrics()).JSHeapUsedSize;
    };
    // Arms painted before the input, and returns from the input to it
    // and the renderer's work meanwhile.
    const timed = async (what, arg, input) => {
      await page.evaluate(([w, a]) => { window.__bench.pending = window.__bench.painted(w, a); }, [what, arg]);
      const before = await metrics();
      await input();
      const ms = await page.evaluate(async () => (await window.__bench.pending) - window.__bench.input);
      const after = await metrics();
      const work = (name) => (after[name] - before[name]) * 1000;
      return [ms, { script: work('ScriptDuration'), style: work('RecalcStyleDuration'), layout: work('LayoutDuration') }];
    };

    // Opened on the search, as a link to it does.
    const hash = new URLSearchParams({ q: plan.query, groupBy: plan.groupBy });
    await page.goto(`${plan.url}#${hash}`, { waitUntil: 'commit' });
    const [rowsAt, barsAt] = await page.evaluate(() => Promise.all([window.__bench.open.rows, window.__bench.open.bars]));
    await page.waitForFunction(() => document.getElementById('status').dataset.phase === 'done');
    const first = since(0, (r) => isList(r) && !param(r, 'continue'));
    const counts = since(0, (r) => param(r, 'groupBy') !== null);
    // What the page fetched before its first rows, from the navigation.
    out.opening = await page.evaluate((url) => {
      const list = performance.getEntriesByName(url).pop();
      return performance.getEntriesByType('resource').filter((e) => e.startTime <= list.startTime)
        .map((e) => ({ path: new URL(e.name).pathname.replace(/.*\/proxy\//, ''), start: e.startTime, end: e.responseEnd }));
    }, first.url);
    await record(out.open, [rowsAt], first, await raw([first]));
    await record(out.counts, [barsAt], counts, await raw([counts]));
    out.counted = Object.fromEntries(await page.evaluate(() =>
      [...document.querySelectorAll('#chart .bar')].map((g) => [g.dataset.value, Number(g.dataset.count)])));
    const heapOpen = await heap();

    // Pages forward: Load more, then End to the last row loaded.
    let domRows = 0, domElements = 0;
    for (let p = 0; p < plan.pages; p++) {
      const before = await page.evaluate(() => window.__bench.loaded());
      const i = requests.length;
      const more = await timed('loaded', before + 1, () => page.click('#load-more'));
      const next = since(i, (r) => isList(r) && param(r, 'continue'));
      await record(out.more, more, next, await raw([next]));
      const loaded = await page.evaluate(() => window.__bench.loaded());
      await page.focus('#result-table tbody tr[tabindex="0"]');
      await record(out.end, await timed('selected', loaded - 1, () => page.keyboard.press('End')));
      const dom = await page.evaluate(() => [document.querySelectorAll('#result-table tbody tr').length, document.getElementsByTagName('*').length]);
      domRows = Math.max(domRows, dom[0]);
      domElements = Math.max(domElements, dom[1]);
    }

    // The selected row's object: Enter, its YAML, then its Events and
    // history.
    await page.evaluate(() => { delete document.getElementById('detail').dataset.loaded; });
    const i = requests.length;
    await page.evaluate(() => { window.__bench.yaml = window.__bench.painted('yaml'); });
    const detail = await timed('detail', undefined, () => page.keyboard.press('Enter'));
    const yaml = [await page.evaluate(async () => (await window.__bench.yaml) - window.__bench.input)];
    const object = since(i, (r) => /\/pods\/[^/]+$/.test(path(r)));
    const rest = [since(i, (r) => path(r).endsWith('/events')), since(i, (r) => path(r).endsWith('/history'))];
    await record(out.yaml, yaml, object, await raw([object]));
    await record(out.detail, detail, rest[1], await raw([object], rest));

    if (run > 0) {
      out.domRows.push(domRows);
      out.domElements.push(domElements);
      out.loaded.push(await page.evaluate(() => window.__bench.loaded()));
      out.heapOpen.push(heapOpen);
      out.heapPaged.push(await heap());
    }
    await page.close();
  }
} finally {
  await close();
  writeFileSync(plan.out, JSON.stringify(out, null, 1));
}
