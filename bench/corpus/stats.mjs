// Counts a schema's members the way bench/corpus/schemas.json reports them:
//   node bench/corpus/stats.mjs <schema.graphql>   prints one JSON object
import { createRequire } from "node:module";
import fs from "node:fs";

const require = createRequire(new URL("../../tests/js/node_modules/", import.meta.url));
const g = require("graphql");

const schema = g.buildSchema(fs.readFileSync(process.argv[2], "utf8"), { assumeValidSDL: true });
const named = Object.values(schema.getTypeMap()).filter(
  (t) => !t.name.startsWith("__") && !g.isSpecifiedScalarType(t),
);
let fields = 0, described = 0, enumValues = 0, deprecated = 0;
for (const t of named) {
  if (g.isObjectType(t) || g.isInterfaceType(t) || g.isInputObjectType(t)) {
    for (const f of Object.values(t.getFields())) {
      fields++;
      if (f.description) described++;
      if (f.deprecationReason) deprecated++;
    }
  }
  if (g.isEnumType(t)) {
    for (const v of t.getValues()) {
      enumValues++;
      if (v.deprecationReason) deprecated++;
    }
  }
}
const roots = (t) => (t ? Object.keys(t.getFields()).length : 0);
console.log(JSON.stringify({
  types: named.length,
  fields,
  enum_values: enumValues,
  described_fields: Math.round((1000 * described) / Math.max(fields, 1)) / 1000,
  deprecated,
  query_fields: roots(schema.getQueryType()),
  mutation_fields: roots(schema.getMutationType()),
  subscription_fields: roots(schema.getSubscriptionType()),
}));
