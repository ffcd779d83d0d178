// drive.mjs drives Debian's chromium through the search page as a user
// would (keyboard and clicks), and writes what the page showed as JSON
// for browser_test.go to compare with the members' own objects.
//
//   node drive.mjs plan.json
//
// plan: {url, out, screenshots, query, groupBy, pickBar, liveName,
// readyFile, asOf, open: [{cluster, namespace, name}], readme}.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { launch } from './chromium.mjs';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const out = { screens: [], dialogs: [], consoleErrors: [] };

const { context, close } = await launch();
try {
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(60000);
  page.on('dialog', async (d) => { out.dialogs.push(d.message()); await d.dismiss(); });
  page.on('console', (m) => { if (m.type() === 'error') out.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => out.consoleErrors.push(String(e)));

  const shot = async (name) => {
    const path = join(plan.screenshots, name + '.png');
    await page.screenshot({ path, fullPage: false });
    out.screens.push(path);
  };
  const searchedCount = () => page.evaluate(() => Number(document.body.dataset.searched || 0));
  const waitSearched = async (after) => {
    await page.waitForFunction((n) => Number(document.body.dataset.searched || 0) > n, after);
    return page.evaluate(() => ({ phase: document.getElementById('status').dataset.phase, text: document.getElementById('status').textContent }));
  };
  const readRows = () => page.evaluate(() => {
    const t = document.getElementById('result-table');
    return {
      headers: [...t.tHead.querySelectorAll('th')].map((th) => th.textContent),
      rows: [...t.tBodies[0].rows].map((tr) => [...tr.cells].map((td) => td.textContent)),
    };
  });
  const readBars = () => page.evaluate(() => [...document.querySelectorAll('#chart .bar')].map((g) => ({ value: g.dataset.value, count: Number(g.dataset.count) })));

  // The page as it opens (its default search), then the plan's search,
  // typed and submitted with Enter.
  await page.goto(plan.url);
  await waitSearched(0);
  // A new grouping searches again: wait for it, so that the next answer
  // waited for is the typed search's.
  let n = await searchedCount();
  if (plan.groupBy && await page.inputValue('#group-by') !== plan.groupBy) {
    await page.selectOption('#group-by', plan.groupBy);
    await waitSearched(n);
    n = await searchedCount();
  }
  await page.focus('#q');
  await page.fill('#q', plan.query);
  await page.keyboard.press('Enter');
  out.search = await waitSearched(n);
  // Counts come with the rows; wait for the chart, drawn or explained.
  await page.waitForFunction(() => document.getElementById('chart').childElementCount > 0);
  Object.assign(out, await readRows());
  out.counts = await readBars();
  out.clusters = await page.evaluate(() => [...document.querySelectorAll('#clusters button')].map((b) => b.textContent));
  await shot('results');
  await (await page.$('#counts')).screenshot({ path: join(plan.screenshots, 'counts.png') });
  out.screens.push(join(plan.screenshots, 'counts.png'));
  if (plan.readme) await page.screenshot({ path: plan.readme });

  // A bar adds its filter: by keyboard, Tab to it and Enter.
  if (plan.pickBar) {
    n = await searchedCount();
    await page.focus(`#chart .bar[data-value="${plan.pickBar}"]`);
    await page.keyboard.press('Enter');
    out.picked = { search: await waitSearched(n), query: await page.inputValue('#q'), ...(await readRows()) };
  }

  // Live: tell the test the page is watching, then wait for its new object.
  if (plan.liveName) {
    writeFileSync(plan.readyFile, 'ready');
    await page.waitForFunction((name) => [...document.querySelectorAll('#result-table tbody td')].some((td) => td.textContent === name), plan.liveName);
    out.live = await readRows();
    await shot('live');
  }

  // Objects: opened from the results by keyboard (arrows, Enter).
  out.objects = [];
  for (const o of plan.open || []) {
    if (o.query !== undefined) {
      n = await searchedCount();
      await page.fill('#q', o.query);
      await page.keyboard.press('Enter');
      await waitSearched(n);
    }
    const index = await page.evaluate((o) => [...document.querySelectorAll('#result-table tbody tr')].findIndex((tr) =>
      [...tr.cells].some((td) => td.textContent === o.name)), o);
    if (index < 0) { out.objects.push({ ...o, missing: true }); continue; }
    await page.focus('#result-table tbody tr[tabindex="0"]');
    await page.keyboard.press('Home');
    for (let i = 0; i < index; i++) await page.keyboard.press('ArrowDown');
    await page.evaluate(() => { delete document.getElementById('detail').dataset.loaded; });
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('detail').dataset.loaded);
    const got = { ...o };
    got.title = await page.textContent('#detail-title');
    got.yaml = await page.textContent('#pane-yaml');
    await shot(`${o.name}-yaml`);
    await page.click('#tab-events');
    got.events = await page.evaluate(() => [...document.querySelectorAll('#events-table tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent)));
    await shot(`${o.name}-events`);
    await page.click('#tab-history');
    got.timeline = await page.evaluate(() => [...document.querySelectorAll('#timeline button')].map((b) => b.textContent));
    got.diff = await page.textContent('#diff');
    await shot(`${o.name}-history`);
    out.objects.push(got);
  }

  // The list as it was: the as-of box, submitted with Enter.
  if (plan.asOf) {
    n = await searchedCount();
    await page.fill('#q', plan.asOfQuery || plan.query);
    await page.fill('#as-of', plan.asOf);
    await page.focus('#as-of');
    await page.keyboard.press('Enter');
    out.asOf = { search: await waitSearched(n), ...(await readRows()) };
    await shot('as-of');
  }

  // Whatever a member's content tried to run, and any markup it made.
  out.pwned = await page.evaluate(() => window.__pwned === undefined ? null : String(window.__pwned));
  out.images = await page.evaluate(() => document.querySelectorAll('img').length);
} finally {
  await close();
  writeFileSync(plan.out, JSON.stringify(out, null, 1));
}

