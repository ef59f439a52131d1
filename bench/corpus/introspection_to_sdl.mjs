// Prints an introspection result (`{"data": {"__schema": ...}}` or `{"__schema": ...}`, on
// stdin) as SDL with graphql-js (tests/js): how scripts/fetch_schemas.py makes a corpus schema
// that its package ships as introspection JSON.
import { createRequire } from "node:module";

const require = createRequire(new URL("../../tests/js/node_modules/", import.meta.url));
const { buildClientSchema, printSchema } = require("graphql");

let input = "";
for await (const chunk of process.stdin) input += chunk;
let parsed = JSON.parse(input);
if (parsed.data) parsed = parsed.data;
// Some packages ship the bare `__schema` object.
if (!parsed.__schema) parsed = { __schema: parsed };
process.stdout.write(printSchema(buildClientSchema(parsed)) + "\n");
