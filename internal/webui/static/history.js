// An object's history: its versions rebuilt from the JSON merge patches
// the history subresource answers (docs/usage.md, "History"), and line
// diffs of their YAML (jsdiff).
import { dump } from './vendor/js-yaml/js-yaml.esm.min.mjs';
import { diffLines } from './vendor/diff/index.js';

// mergePatch applies an RFC 7386 JSON merge patch.
export function mergePatch(target, patch) {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

// versions rebuilds each version of the history's items in order; a
// deletion keeps the last state.
export function versions(items) {
  let state = null;
  return items.map((item) => {
    if (item.type !== 'DELETED' && item.patch !== undefined) state = mergePatch(state, item.patch);
    return { ...item, object: state };
  });
}

// toYAML renders an object as YAML, without the managedFields nobody reads.
export function toYAML(obj) {
  if (obj && obj.metadata && obj.metadata.managedFields) {
    obj = { ...obj, metadata: { ...obj.metadata } };
    delete obj.metadata.managedFields;
  }
  return dump(obj, { lineWidth: -1, noRefs: true });
}

// renderDiff fills pre with the line diff from a to b, a line each,
// marked added or removed (text only).
export function renderDiff(pre, a, b) {
  pre.replaceChildren();
  for (const part of diffLines(a, b)) {
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
