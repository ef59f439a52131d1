// Checks corpus questions against their schema, from the schema alone (graphql-js 16, installed
// under tests/js by scripts/setup):
//
//   node bench/corpus/check.mjs <schema.graphql> <questions.jsonl>...
//
// Every coordinate must exist and be of a kind its style allows; none may be deprecated but a
// later alternative of a one-member question; ids and questions are unique.
// Styles: `question` and `keywords` (1-3 coordinates, any one a hit; keywords are 1-4 words),
// `task` (2-8 distinct coordinates, all needed), `action` (1-3 mutation root fields that make
// the change, and `inputs`: 1-5 arguments of the first, or input fields reachable from them),
// and `description` (fitting data only: a member's own description as the question).
// Exits 1 naming every bad line.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../../tests/js/package.json'));
const graphql = require('graphql');
const { buildSchema, isObjectType, isInterfaceType, isInputObjectType, isEnumType, getNamedType } = graphql;

const [schemaFile, ...files] = process.argv.slice(2);
if (!schemaFile || files.length === 0) {
  console.error('usage: node bench/corpus/check.mjs <schema.graphql> <questions.jsonl>...');
  process.exit(2);
}
const schema = buildSchema(fs.readFileSync(schemaFile, 'utf8'), { assumeValidSDL: true });
const mutation = schema.getMutationType();

// A coordinate's member: { kind, deprecated, type?, field?, arg? }, or null when absent.
function resolve(c) {
  let m;
  if ((m = c.match(/^@(\w+)(?:\((\w+):\))?$/))) {
    const d = schema.getDirective(m[1]);
    if (!d) return null;
    if (!m[2]) return { kind: 'directive', deprecated: false };
    const a = d.args.find((x) => x.name === m[2]);
    return a ? { kind: 'directive-argument', deprecated: !!a.deprecationReason } : null;
  }
  if (!(m = c.match(/^(\w+)(?:\.(\w+)(?:\((\w+):\))?)?$/))) return null;
  const t = schema.getType(m[1]);
  if (!t) return null;
  if (!m[2]) return { kind: 'type', deprecated: false, type: t };
  if (isEnumType(t)) {
    if (m[3]) return null;
    const v = t.getValue(m[2]);
    return v ? { kind: 'enum-value', deprecated: !!v.deprecationReason, type: t } : null;
  }
  if (!(isObjectType(t) || isInterfaceType(t) || isInputObjectType(t))) return null;
  const f = t.getFields()[m[2]];
  if (!f) return null;
  if (isInputObjectType(t)) {
    return m[3] ? null : { kind: 'input-field', deprecated: !!f.deprecationReason, type: t, field: f };
  }
  if (!m[3]) return { kind: 'field', deprecated: !!f.deprecationReason, type: t, field: f };
  const a = f.args.find((x) => x.name === m[3]);
  return a ? { kind: 'argument', deprecated: !!a.deprecationReason, type: t, field: f, arg: a } : null;
}

// The input object types a field's arguments reach, directly or through other input objects.
function inputsReached(field) {
  const seen = new Set();
  const todo = field.args.map((a) => getNamedType(a.type));
  while (todo.length) {
    const t = todo.pop();
    if (!isInputObjectType(t) || seen.has(t.name)) continue;
    seen.add(t.name);
    for (const f of Object.values(t.getFields())) todo.push(getNamedType(f.type));
  }
  return seen;
}

const STYLES = new Set(['question', 'keywords', 'task', 'action', 'description']);
const LEGACY_KINDS = new Set(['paraphrase', 'mutation', 'argument', 'enum-filter', 'exact', 'deprecated-aware', 'entity/federation']);
let bad = 0;
const ids = new Set();
const queries = new Set();
const counts = {};
const problem = (where, message) => { console.log(`${where}: ${message}`); bad++; };

for (const file of files) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    const where = `${file}:${i + 1}`;
    let q;
    try { q = JSON.parse(line); } catch (e) { return problem(where, `not JSON: ${e.message}`); }
    const style = q.style ?? (q.kind === 'mutation' ? 'action' : 'question');
    if (typeof q.id !== 'string' || !q.id) return problem(where, 'no id');
    if (ids.has(q.id)) problem(where, `id ${q.id} repeated`);
    ids.add(q.id);
    if (!STYLES.has(style)) return problem(where, `style ${style} is not one of ${[...STYLES].join(', ')}`);
    if (q.kind !== undefined && !LEGACY_KINDS.has(q.kind)) problem(where, `kind ${q.kind} unknown`);
    if (typeof q.query !== 'string' || !q.query.trim()) return problem(where, 'no query');
    const norm = q.query.trim().toLowerCase();
    if (queries.has(norm)) problem(where, `query repeated: ${q.query}`);
    queries.add(norm);
    const expected = q.expected;
    if (!Array.isArray(expected) || expected.length === 0) return problem(where, 'no expected coordinates');
    if (new Set(expected).size !== expected.length) problem(where, 'an expected coordinate is repeated');
    const [least, most] = style === 'task' ? [2, 8] : style === 'description' ? [1, 1] : [1, 3];
    if (expected.length < least || expected.length > most) problem(where, `${style} needs ${least}-${most} expected coordinates, has ${expected.length}`);
    if (style === 'keywords' && q.query.trim().split(/\s+/).length > 4) problem(where, `keywords are 1-4 words: "${q.query}"`);
    const members = expected.map((c) => [c, resolve(c)]);
    members.forEach(([c, r], k) => {
      if (!r) return problem(where, `${c} is not in the schema`);
      // A deprecated member may only be a later alternative of a one-member question.
      const alternative = k > 0 && (style === 'question' || style === 'keywords');
      if (r.deprecated && !alternative && style !== 'description') problem(where, `${c} is deprecated`);
    });
    // A legacy `mutation` question (no `style`) may expect what a mutation takes.
    if (q.style === 'action') {
      for (const [c, r] of members) {
        if (r && !(r.kind === 'field' && mutation && r.type === mutation)) problem(where, `${c} is not a mutation root field`);
      }
      const first = members[0][1];
      const inputs = q.inputs ?? [];
      if (q.style === 'action' && (inputs.length < 1 || inputs.length > 5)) problem(where, `an action names 1-5 inputs, has ${inputs.length}`);
      const reached = first?.kind === 'field' ? inputsReached(first.field) : new Set();
      for (const c of inputs) {
        const r = resolve(c);
        if (!r) { problem(where, `input ${c} is not in the schema`); continue; }
        if (r.deprecated) problem(where, `input ${c} is deprecated`);
        const ownArgument = r.kind === 'argument' && r.field === first?.field && r.type === mutation;
        const reachedField = r.kind === 'input-field' && reached.has(r.type.name);
        if (!ownArgument && !reachedField) problem(where, `input ${c} is neither an argument of ${expected[0]} nor an input field it takes`);
      }
    } else if (q.inputs !== undefined && style !== 'action') {
      problem(where, 'only an action has inputs');
    }
    counts[style] = (counts[style] ?? 0) + 1;
  });
}
console.log(`${files.join(' ')}: ${ids.size} questions, ${bad} problems, ${JSON.stringify(counts)}`);
process.exit(bad ? 1 : 0);
