// Rebuild the Unchained Engine GraphQL schema from @unchainedshop/api's shipped typeDefs,
// the same way lib/schema/index.js buildDefaultTypeDefs() does, with the default role actions
// from lib/roles/index.js (EventType/WorkType left as shipped: filled by plugins at run time).
import { createRequire } from 'module';
import fs from 'fs';
const require = createRequire(new URL('../../tests/js/node_modules/', import.meta.url));
const { buildASTSchema, parse, printSchema, concatAST } = require('graphql');
const base = process.argv[2] || '/tmp/xschema/pkgs/x/unch/package/lib/';
const parts = [];
for (const f of ['scalars.js','directives.js','types/index.js','inputTypes.js','query.js','mutation.js']) {
  const m = await import(base + 'schema/' + f);
  parts.push(...m.default);
}
const rolesSrc = fs.readFileSync(base + 'roles/index.js', 'utf8');
const arr = rolesSrc.slice(rolesSrc.indexOf('const actions = ['), rolesSrc.indexOf('].reduce('));
const actions = [...arr.matchAll(/'(\w+)'/g)].map(m => m[1]);
parts.push(`extend enum RoleAction { ${actions.join(',')} }`);
const doc = concatAST(parts.filter(Boolean).map(s => parse(s)));
const schema = buildASTSchema(doc);
process.stdout.write(printSchema(schema));
