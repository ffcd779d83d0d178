// The search box's small language: words separated by spaces, each a
// search parameter of the view (docs/usage.md, "Search parameters"), a
// label requirement, or a part of a name. parse turns the words into what
// the list request needs; the page never builds a query any other way.

// terms maps a word's prefix to the URL parameter it sets. Parameters
// that take several values take them comma-separated, and repeated words
// add to them.
export const terms = [
  { word: 'kind', alias: ['k', 'resource'], help: 'a resource: pods, deploy, deployments.apps, Service' },
  { word: 'collection', alias: [], help: 'a collection of kinds: workloads, networking' },
  { word: 'cluster', alias: ['clusters'], param: 'clusters', list: true, help: 'clusters, comma-separated' },
  { word: 'ns', alias: ['namespace', 'namespaces'], param: 'namespaces', list: true, help: 'namespaces, comma-separated' },
  { word: 'name', alias: ['names'], param: 'names', list: true, help: 'exact names, comma-separated' },
  { word: 'fuzzy', alias: ['fuzzyName'], param: 'fuzzyName', help: 'names containing the value (a bare word does the same)' },
  { word: 'image', alias: ['images'], param: 'images', list: true, help: 'objects running an image whose reference contains the value' },
  { word: 'q', alias: ['keyword', 'keywords'], param: 'q', list: true, help: 'objects with every word of the value in their name, namespace, labels, annotations or indexed fields; words are letters and digits, any case; web* for a prefix: q:db.example,web*' },
  { word: 'owner', alias: ['ownerName'], param: 'ownerName', help: 'objects owned by the object of that name' },
  { word: 'refersTo', alias: [], param: 'refersTo', list: true, help: 'objects that refer to type/[namespace/]name: refersTo:secret/db-pass (a Service refers to the pods it selects)' },
  { word: 'referredBy', alias: [], param: 'referredBy', help: 'what the object type/[namespace/]name refers to: referredBy:pod/web-0' },
  { word: 'hops', alias: [], param: 'hops', help: 'with refersTo or referredBy, follow references up to 3 hops' },
  { word: 'ownerUID', alias: [], param: 'ownerUID', help: 'objects owned by the object of that uid' },
  { word: 'ownerGR', alias: [], param: 'ownerGR', help: 'the owner\'s resource.group, e.g. deployments.apps' },
  { word: 'ownerSeniority', alias: [], param: 'ownerSeniority', help: '0 children (default), 1 grandchildren, …' },
  { word: 'since', alias: [], param: 'since', help: 'created since (RFC3339, date or Unix seconds)' },
  { word: 'before', alias: [], param: 'before', help: 'created before' },
  { word: 'asOf', alias: ['asof'], param: 'asOf', help: 'the list as it was at a revision, a time or a duration ago (2h)' },
  { word: 'orderby', alias: ['orderBy'], param: 'orderby', help: 'name or name.desc' },
  { word: 'field', alias: [], help: 'a field selector: field:status.phase=Running, field:spec.nodeName!=n1' },
  { word: 'groupBy', alias: ['groupby'], help: 'the counts\' grouping: cluster, namespace, label:app, field:status.phase' },
];

const byWord = new Map();
for (const t of terms) {
  for (const w of [t.word, ...t.alias]) byWord.set(w.toLowerCase(), t);
}

// Label requirements as a label selector writes them: k=v, k==v, k!=v,
// !k, and k in (a,b) / k notin (a,b) written without spaces.
const labelRequirement = /^!?[A-Za-z0-9][-A-Za-z0-9_./]*(?:(?:==?|!=)[-A-Za-z0-9_.]*|\s*(?:in|notin)\s*\([-A-Za-z0-9_.,]*\))?$/;

// parse reads the search box. It returns the resource asked for (kind or
// collection, '' when none), the URL parameters of the list, the groupBy
// asked for, and the words it did not understand (shown, never guessed).
export function parse(text) {
  const out = { kind: '', collection: '', params: new URLSearchParams(), groupBy: '', unknown: [] };
  const labels = [], fields = [], lists = new Map();
  for (const word of tokens(text)) {
    const colon = word.indexOf(':');
    const term = colon > 0 ? byWord.get(word.slice(0, colon).toLowerCase()) : undefined;
    if (term) {
      const value = word.slice(colon + 1);
      if (value === '') { out.unknown.push(word); continue; }
      if (term.word === 'kind') out.kind = value;
      else if (term.word === 'collection') out.collection = value;
      else if (term.word === 'field') fields.push(value);
      else if (term.word === 'groupBy') out.groupBy = value;
      else if (term.word === 'orderby') out.params.set('orderby', value.replace(/\.desc$/, ' desc'));
      else if (term.list) lists.set(term.param, [...(lists.get(term.param) || []), ...value.split(',').filter(Boolean)]);
      else out.params.set(term.param, value);
    } else if (labelRequirement.test(word) && /[=!(]/.test(word)) {
      labels.push(word.replace(/\s+/g, ' '));
    } else if (/^[-a-z0-9.]+$/.test(word)) {
      out.params.set('fuzzyName', word);
    } else {
      out.unknown.push(word);
    }
  }
  for (const [param, values] of lists) out.params.set(param, values.join(','));
  if (labels.length) out.params.set('labelSelector', labels.join(','));
  if (fields.length) out.params.set('fieldSelector', fields.join(','));
  return out;
}

// tokens splits at spaces, but keeps "k in (a, b)" whole.
function tokens(text) {
  const out = [];
  const re = /\S+\s+(?:in|notin)\s*\([^)]*\)|\S+/g;
  for (const m of text.matchAll(re)) out.push(m[0]);
  return out;
}

// filterWord is the word that selects the value of a count's group term
// (cluster, namespace, label:<key>, field:<path>); '' when the group has
// no value for it, which no word selects.
export function filterWord(term, value) {
  if (value === undefined || value === null || value === '') return '';
  if (term === 'cluster') return 'cluster:' + value;
  if (term === 'namespace') return 'ns:' + value;
  if (term.startsWith('label:')) return term.slice(6) + '=' + value;
  if (term.startsWith('field:')) return 'field:' + term.slice(6) + '=' + value;
  return '';
}

// addWord appends word to the search text unless it is there already.
export function addWord(text, word) {
  const words = tokens(text);
  if (words.includes(word)) return text;
  return [...words, word].join(' ');
}
