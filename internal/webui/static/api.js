// Requests of the page: all GETs of the user's own origin (kubectl proxy),
// relative to the view the page is served under, so they carry the user's
// credentials and nothing else, and the view's authorization decides what
// they answer.

export const tableAccept = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const searchGroup = '/apis/search.panorama.io/v1alpha1';

// The page is at <prefix>/apis/search.panorama.io/v1alpha1/clusters/<view>/proxy/ui/.
const match = location.pathname.match(/^(.*)\/apis\/search\.panorama\.io\/v1alpha1\/clusters\/([^/]+)\/proxy\/ui\//);
export const prefix = match ? match[1] : '';
export const viewName = match ? decodeURIComponent(match[2]) : '_all';
export const acrossClusters = viewName === '_all' || viewName === '_flat';
const viewBase = new URL('../', location.href);

// viewURL is path (member-style, without a leading /) under view, this
// page's view by default.
export function viewURL(path, view) {
  if (view === undefined || view === viewName) return new URL(path, viewBase);
  return new URL(`${prefix}${searchGroup}/clusters/${encodeURIComponent(view)}/proxy/${path}`, location.origin);
}

export function hostURL(path) { return new URL(prefix + path, location.origin); }

export function collectionURL(name) {
  return new URL(`${prefix}${searchGroup}/collectionresources/${encodeURIComponent(name)}`, location.origin);
}

// RequestError carries the Status the server answered.
export class RequestError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function getJSON(url, { accept = 'application/json', signal } = {}) {
  const resp = await fetch(url, { headers: { Accept: accept }, signal, credentials: 'same-origin', cache: 'no-store' });
  const text = await resp.text();
  let body;
  try { body = JSON.parse(text); } catch { body = undefined; }
  if (!resp.ok) {
    const message = body && body.kind === 'Status' && body.message ? body.message : `${resp.status} ${resp.statusText}`;
    throw new RequestError(resp.status, message, body && body.reason);
  }
  if (body === undefined) throw new RequestError(resp.status, 'the answer is not JSON');
  return body;
}

// watch reads a watch's events as they come and calls onEvent with each;
// it returns when the server ends the watch or signal aborts it.
export async function watch(url, { accept, signal, onEvent }) {
  const resp = await fetch(url, { headers: { Accept: accept }, signal, credentials: 'same-origin', cache: 'no-store' });
  if (!resp.ok) throw new RequestError(resp.status, `${resp.status} ${resp.statusText}`);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) onEvent(JSON.parse(line));
    }
  }
}

// aggregatedDiscovery asks for discovery in one document per root (/api,
// /apis), as kubectl does, rather than a document per group version read
// after the group list: the page's first list waits for it.
const aggregatedDiscovery = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

// Resources the view serves, from its discovery: core first, then every
// group's preferred version (the first listed), in discovery's order,
// read once.
let discovered;
export function resources() {
  if (!discovered) {
    discovered = (async () => {
      const roots = await Promise.all(['api', 'apis'].map((root) => getJSON(viewURL(root), { accept: aggregatedDiscovery })));
      const out = [];
      for (const g of roots.flatMap((root) => root.items || [])) {
        const preferred = (g.versions || [])[0];
        for (const r of (preferred && preferred.resources) || []) {
          out.push({
            name: r.resource, singularName: r.singularResource, kind: (r.responseKind && r.responseKind.kind) || '',
            namespaced: r.scope === 'Namespaced', verbs: r.verbs || [], shortNames: r.shortNames || [],
            group: (g.metadata && g.metadata.name) || '', version: preferred.version,
          });
        }
      }
      return out.filter((r) => !r.name.includes('/') && r.verbs.includes('list'));
    })();
    discovered.catch(() => { discovered = undefined; });
  }
  return discovered;
}

// findResource resolves a kind word as kubectl does: a plural or singular
// name (also as resource.group or resource.version.group), else a short
// name, each in the first group discovery lists that serves it (the
// server lists Kubernetes' own groups first).
export async function findResource(word) {
  const all = await resources();
  const w = word.toLowerCase();
  const named = (r, name) => r.name === name || r.singularName === name;
  const dot = w.indexOf('.');
  if (dot > 0) {
    const name = w.slice(0, dot), rest = w.slice(dot + 1);
    const qualified = all.find((r) => named(r, name) && r.group === rest) ||
      all.find((r) => named(r, name) && `${r.version}.${r.group}` === rest);
    if (qualified) return qualified;
  }
  return all.find((r) => named(r, w)) || all.find((r) => (r.shortNames || []).includes(w));
}

// resourcePath is the member-style path of r in namespace ns ('' for all).
// Discovery's names are the member's (untrusted), so each is one encoded
// path segment.
export function resourcePath(r, ns) {
  const e = encodeURIComponent;
  const base = r.group ? `apis/${e(r.group)}/${e(r.version)}` : 'api/v1';
  return ns && r.namespaced ? `${base}/namespaces/${e(ns)}/${e(r.name)}` : `${base}/${e(r.name)}`;
}
