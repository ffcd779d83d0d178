// Unit tests of the page's modules that need no browser, run by node's
// test runner from webui_test.go (TestPageModules).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { versions, toYAML, diffParts, renderDiff, maxEditLength } from '../static/history.js';

test('a re-created object shows none of its earlier incarnation', () => {
  const v = versions([
    { revision: 1, type: 'ADDED', patch: { metadata: { name: 'x', labels: { old: 'yes' } }, spec: { a: 1 } } },
    { revision: 2, type: 'MODIFIED', patch: { spec: { a: 2 } } },
    { revision: 3, type: 'DELETED', patch: null },
    { revision: 4, type: 'ADDED', patch: { metadata: { name: 'x' }, spec: { b: 2 } } },
  ]);
  assert.deepEqual(JSON.parse(JSON.stringify(v[1].object)), { metadata: { name: 'x', labels: { old: 'yes' } }, spec: { a: 2 } });
  assert.equal(v[2].object, null);
  assert.equal(toYAML(v[3].object), 'metadata:\n  name: x\nspec:\n  b: 2\n');
  // An ADDED is the whole object, even with no DELETED before it.
  const again = versions([v[0], { revision: 5, type: 'ADDED', patch: { metadata: { name: 'x' } } }]);
  assert.equal(toYAML(again[1].object), 'metadata:\n  name: x\n');
});

test('a history that leaves out the first versions starts from the object its first item carries', () => {
  const v = versions([
    { revision: 5, type: 'MODIFIED', patch: { spec: { replicas: 2 } }, object: { metadata: { name: 'web' }, spec: { replicas: 2, paused: true } } },
    { revision: 7, type: 'MODIFIED', patch: { spec: { replicas: 3, paused: null } } },
  ]);
  assert.equal(toYAML(v[0].object), 'metadata:\n  name: web\nspec:\n  replicas: 2\n  paused: true\n');
  assert.equal(toYAML(v[1].object), 'metadata:\n  name: web\nspec:\n  replicas: 3\n');
});

test('a __proto__ key is a key: its changes show and pollute nothing', () => {
  const v = versions([
    { revision: 1, type: 'ADDED', patch: JSON.parse('{"data":{"__proto__":"before","a":"1"}}') },
    { revision: 2, type: 'MODIFIED', patch: JSON.parse('{"data":{"__proto__":"after"}}') },
    { revision: 3, type: 'MODIFIED', patch: JSON.parse('{"spec":{"__proto__":{"polluted":1}}}') },
  ]);
  assert.equal(toYAML(v[0].object), "data:\n  __proto__: before\n  a: '1'\n");
  assert.equal(toYAML(v[1].object), "data:\n  __proto__: after\n  a: '1'\n");
  assert.equal(toYAML(v[2].object), "data:\n  __proto__: after\n  a: '1'\nspec:\n  __proto__:\n    polluted: 1\n");
  assert.equal({}.polluted, undefined);
  const changed = diffParts(toYAML(v[0].object), toYAML(v[1].object)).filter((p) => p.added || p.removed);
  assert.deepEqual(changed.map((p) => p.value), ['  __proto__: before\n', '  __proto__: after\n']);
});

test('a diff beyond maxEditLength is refused, not computed', () => {
  const lines = (n, v) => Array.from({ length: n }, (_, i) => `k${i}: ${v}${i}`).join('\n') + '\n';
  const small = diffParts(lines(maxEditLength / 4, 'a'), lines(maxEditLength / 4, 'b'));
  assert.equal(small.filter((p) => p.added).length, 1);
  assert.equal(diffParts(lines(maxEditLength, 'a'), lines(maxEditLength, 'b')), undefined);
  const pre = { textContent: '', replaceChildren() { this.textContent = ''; } };
  renderDiff(pre, lines(maxEditLength, 'a'), lines(maxEditLength, 'b'));
  assert.match(pre.textContent, /^Too many changes to show/);
});

test('what YAML cannot render is said as text', () => {
  const cyclic = { a: {} };
  cyclic.a.b = cyclic;
  assert.match(toYAML(cyclic), /^\(cannot show this object as YAML: /);
});

// api.js reads discovery from its view and resolves a word as kubectl
// does: plural and singular names before short names, each in discovery's
// order. The server lists Kubernetes' own groups first and leaves out of
// discovery a member's resource named as their short names
// (TestDiscoveryRanksKubernetesGroupsFirst). What discovery names is
// encoded into paths.
test('kind words resolve in discovery\'s order; discovery names are encoded', async () => {
  const resource = (name, singular, kind, shortNames = []) => ({ resource: name, singularResource: singular, responseKind: { kind },
    scope: 'Namespaced', verbs: ['get', 'list', 'watch'], shortNames });
  const group = (name, resources) => ({ metadata: { name }, versions: [{ version: 'v1', resources }, { version: 'v0', resources: [] }] });
  // Aggregated discovery, as the view answers it to the page's Accept.
  const docs = {
    '/api': { kind: 'APIGroupDiscoveryList', items: [group('', [resource('pods', 'pod', 'Pod', ['po'])])] },
    '/apis': { kind: 'APIGroupDiscoveryList', items: [
      group('apps', [resource('deployments', 'deployment', 'Deployment', ['deploy'])]),
      group('aaa.example.com', [resource('deploys', 'deploy', 'Deploy', ['dep']), resource('hogs', 'hog', 'Hog', ['deploy', 'po'])]),
    ] },
  };
  const view = '/apis/search.panorama.io/v1alpha1/clusters/_all/proxy';
  const server = createServer((req, res) => {
    const doc = req.headers.accept.includes('g=apidiscovery.k8s.io;v=v2') && docs[req.url.slice(view.length)];
    res.writeHead(doc ? 200 : 404, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(doc || { kind: 'Status', message: 'not found' }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    globalThis.location = new URL(`http://127.0.0.1:${server.address().port}${view}/ui/`);
    const { findResource, resourcePath } = await import('../static/api.js');
    assert.equal((await findResource('deploy')).group, 'aaa.example.com'); // its singular, as kubectl resolves it
    assert.equal((await findResource('deployment')).group, 'apps');
    assert.equal((await findResource('Deployment.apps')).name, 'deployments');
    assert.equal((await findResource('deployments.v1.apps')).name, 'deployments');
    assert.equal((await findResource('po')).group, '');
    assert.equal((await findResource('pod')).group, '');
    assert.equal((await findResource('dep')).group, 'aaa.example.com');
    assert.equal((await findResource('hog')).name, 'hogs');
    assert.equal(resourcePath({ group: 'a/../b', version: 'v1?x', name: 'n#', namespaced: true }, 'ns/x'),
      'apis/a%2F..%2Fb/v1%3Fx/namespaces/ns%2Fx/n%23');
  } finally {
    server.close();
  }
});

test('relation words become the relation parameters', async () => {
  const { parse } = await import('../static/query.js');
  const got = parse('kind:pods refersTo:secret/db-pass refersto:cm/shop/cfg hops:2 app=web');
  assert.equal(got.params.get('refersTo'), 'secret/db-pass,cm/shop/cfg');
  assert.equal(got.params.get('hops'), '2');
  assert.equal(got.params.get('labelSelector'), 'app=web');
  assert.equal(parse('kind:cm referredBy:pod/web-0').params.get('referredBy'), 'pod/web-0');
  assert.deepEqual(parse('refersTo:').unknown, ['refersTo:']);
});

test('keyword words become q, a bare word still a part of a name', async () => {
  const { parse } = await import('../static/query.js');
  const got = parse('kind:pods q:db.example keywords:web* Keyword:EAST,sha256 shop app=web');
  assert.equal(got.params.get('q'), 'db.example,web*,EAST,sha256');
  assert.equal(got.params.get('fuzzyName'), 'shop');
  assert.equal(got.params.get('labelSelector'), 'app=web');
  assert.deepEqual(got.unknown, []);
  assert.deepEqual(parse('q:').unknown, ['q:']);
});
