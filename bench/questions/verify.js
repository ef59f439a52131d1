// usage: node verify.js <schema.graphql> <questions.jsonl>
const { buildSchema, isObjectType, isInterfaceType, isInputObjectType, isEnumType } = require(require('path').join(__dirname, '../../tests/js/node_modules/graphql'));
const fs = require('fs');
const [sf, qf] = process.argv.slice(2);
const s = buildSchema(fs.readFileSync(sf, 'utf8'));
function resolve(c) {
  let m;
  if ((m = c.match(/^@(\w+)(?:\((\w+):\))?$/))) {
    const d = s.getDirective(m[1]); if (!d) return null;
    if (m[2]) { const a = d.args.find(x => x.name === m[2]); return a ? { dep: a.deprecationReason } : null; }
    return { dep: null };
  }
  if ((m = c.match(/^(\w+)(?:\.(\w+)(?:\((\w+):\))?)?$/))) {
    const t = s.getType(m[1]); if (!t) return null;
    if (!m[2]) return { dep: null };
    if (isEnumType(t)) { if (m[3]) return null; const v = t.getValue(m[2]); return v ? { dep: v.deprecationReason } : null; }
    if (isObjectType(t) || isInterfaceType(t) || isInputObjectType(t)) {
      const f = t.getFields()[m[2]]; if (!f) return null;
      if (m[3]) { if (!f.args) return null; const a = f.args.find(x => x.name === m[3]); return a ? { dep: a.deprecationReason } : null; }
      return { dep: f.deprecationReason };
    }
    return null;
  }
  return null;
}
const lines = fs.readFileSync(qf, 'utf8').split('\n').filter(l => l.trim());
let bad = 0; const ids = new Set(); const kinds = {};
const KINDS = new Set(['paraphrase','mutation','argument','enum-filter','exact','deprecated-aware','entity/federation']);
for (const l of lines) {
  let q; try { q = JSON.parse(l); } catch (e) { console.log('BAD JSON', l); bad++; continue; }
  const keys = Object.keys(q).join(',');
  if (keys !== 'id,schema,query,expected,kind') { console.log('KEYS', q.id, keys); bad++; }
  if (ids.has(q.id)) { console.log('DUP ID', q.id); bad++; } ids.add(q.id);
  if (!KINDS.has(q.kind)) { console.log('KIND', q.id, q.kind); bad++; }
  kinds[q.kind] = (kinds[q.kind] || 0) + 1;
  if (!Array.isArray(q.expected) || q.expected.length < 1 || q.expected.length > 3) { console.log('EXPECTED LEN', q.id); bad++; }
  for (const c of q.expected) {
    const r = resolve(c);
    if (!r) { console.log('MISSING', q.id, c); bad++; }
    else if (r.dep) console.log('NOTE deprecated coordinate', q.id, c, q.kind);
  }
  if (q.kind === 'deprecated-aware' && resolve(q.expected[0])?.dep) { console.log('DEPR-AWARE expects deprecated first', q.id); bad++; }
}
console.log(qf, 'questions:', lines.length, 'bad:', bad, JSON.stringify(kinds));
process.exit(bad ? 1 : 0);
