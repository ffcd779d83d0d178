// An object's history: its versions rebuilt from the JSON merge patches
// the history subresource answers (docs/usage.md, "History"), and line
// diffs of their YAML (jsdiff).
import { dump } from './vendor/js-yaml/js-yaml.esm.min.mjs';
// jsdiff's line diff alone: its index imports all of jsdiff's modules,
// each a request the page waits for before its first search.
import { diffLines } from './vendor/diff/diff/line.js';

// mergePatch applies an RFC 7386 JSON merge patch. Keys are members'
// (untrusted): the objects it builds have no prototype and take keys by
// defineProperty, so a "__proto__" key is a key like any other rather than
// a setter that would hide it, or the change under it, from the page.
export function mergePatch(target, patch) {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out = Object.create(null);
  if (target !== null && typeof target === 'object' && !Array.isArray(target)) {
    for (const [k, v] of Object.entries(target)) setKey(out, k, v);
  }
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else setKey(out, k, mergePatch(Object.hasOwn(out, k) ? out[k] : undefined, v));
  }
  return out;
}

function setKey(obj, k, v) {
  Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
}

// versions rebuilds each version of the history's items in order, as
// viewclient.VersionAt does: ADDED starts a new incarnation from its patch
// (the whole object), MODIFIED merges its patch, and after DELETED there
// is no object. A first MODIFIED item, whose previous version the answer
// leaves out (a limit, the retention), carries the whole object.
export function versions(items) {
  let state = null;
  return items.map((item) => {
    if (item.type === 'DELETED') state = null;
    else if (item.type === 'ADDED') state = mergePatch(null, item.patch === undefined ? null : item.patch);
    else if (item.object !== undefined) state = mergePatch(null, item.object);
    else if (item.patch !== undefined) state = mergePatch(state, item.patch);
    return { ...item, object: state };
  });
}

// toYAML renders an object as YAML, without the managedFields nobody
// reads; what cannot be rendered says why, as text.
export function toYAML(obj) {
  try {
    if (obj && obj.metadata && obj.metadata.managedFields) {
      obj = mergePatch(obj, { metadata: { managedFields: null } });
    }
    return dump(obj, { lineWidth: -1, noRefs: true });
  } catch (err) {
    return `(cannot show this object as YAML: ${err.message})`;
  }
}

// maxEditLength bounds the diff's work (lines added plus removed), which
// grows with the product of the versions' length and their difference:
// beyond it the page says so rather than freezing on the main thread.
export const maxEditLength = 1000;

// diffParts is the line diff from a to b, or undefined when the versions
// differ by more than maxEditLength lines.
export function diffParts(a, b) {
  return diffLines(a, b, { maxEditLength });
}

// renderDiff fills pre with the line diff from a to b, a line each,
// marked added or removed (text only).
export function renderDiff(pre, a, b) {
  pre.replaceChildren();
  let parts;
  try {
    parts = diffParts(a, b);
  } catch (err) {
    pre.textContent = `Cannot diff these versions: ${err.message}`;
    return;
  }
  if (parts === undefined) {
    pre.textContent = `Too many changes to show: the versions differ by more than ${maxEditLength} lines.`;
    return;
  }
  for (const part of parts) {
    const mark = part.added ? '+ ' : part.removed ? '- ' : '  ';
    const lines = part.value.replace(/\n$/, '').split('\n');
    for (const line of lines) {
      const span = document.createElement('span');
      span.className = part.added ? 'added' : part.removed ? 'removed' : 'same';
      span.textContent = mark + line + '\n';
      pre.append(span);
    }
  }
}
