// Counts as a horizontal bar chart, drawn as SVG with DOM calls only:
// group values come from the members and are shown as text, never parsed
// as markup.

const svgNS = 'http://www.w3.org/2000/svg';
const barHeight = 22, labelWidth = 220, barWidth = 420, countWidth = 80;

function el(name, attrs) {
  const e = document.createElementNS(svgNS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

// drawCounts draws counts.items (each {group: {term: value}, count}) for
// the grouping term; onPick(value) runs when a bar is clicked or
// activated by keyboard.
export function drawCounts(container, counts, term, onPick) {
  container.replaceChildren();
  const items = counts.items || [];
  if (items.length === 0) {
    const p = document.createElement('p');
    p.textContent = 'Nothing to count.';
    container.append(p);
    return;
  }
  const max = Math.max(...items.map((i) => i.count));
  const height = items.length * barHeight;
  const svg = el('svg', { width: labelWidth + barWidth + countWidth, height, viewBox: `0 0 ${labelWidth + barWidth + countWidth} ${height}`, role: 'list', 'aria-label': `Counts by ${term}` });
  items.forEach((item, i) => {
    const value = item.group ? item.group[term] : undefined;
    const label = value === undefined || value === null || value === '' ? '<none>' : String(value);
    const y = i * barHeight;
    const g = el('g', { class: 'bar', role: 'listitem', 'data-value': label, 'data-count': item.count });
    const width = Math.max(2, Math.round((item.count / max) * barWidth));
    const name = el('text', { x: labelWidth - 8, y: y + 15, 'text-anchor': 'end', class: 'bar-label' });
    name.textContent = label.length > 30 ? label.slice(0, 29) + '…' : label;
    const title = el('title', {});
    title.textContent = `${label}: ${item.count}`;
    const rect = el('rect', { x: labelWidth, y: y + 3, width, height: barHeight - 6, rx: 2 });
    const count = el('text', { x: labelWidth + width + 6, y: y + 15, class: 'bar-count' });
    count.textContent = String(item.count);
    g.append(title, name, rect, count);
    if (value !== undefined && value !== null && value !== '') {
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.setAttribute('aria-label', `${label}: ${item.count}, add as a filter`);
      g.addEventListener('click', () => onPick(String(value)));
      g.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); onPick(String(value)); }
      });
    }
    svg.append(g);
  });
  container.append(svg);
  if (counts.metadata && counts.metadata.remainingItemCount) {
    const p = document.createElement('p');
    p.textContent = `and ${counts.metadata.remainingItemCount} more groups`;
    container.append(p);
  }
}
