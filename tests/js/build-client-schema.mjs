// graphql-js, the reference implementation, for the tests that check the router's answers.
//   node build-client-schema.mjs --query   prints graphql-js's introspection query
//   node build-client-schema.mjs < r.json  builds a client schema from an introspection
//     response (`{"data": {"__schema": ...}}`), validates it and prints its SDL; exits 1 with
//     the reasons otherwise.
import {
  buildClientSchema,
  getIntrospectionQuery,
  printSchema,
  validateSchema,
} from "graphql";

if (process.argv.includes("--query")) {
  process.stdout.write(getIntrospectionQuery({ inputValueDeprecation: true }));
  process.exit(0);
}
let input = "";
for await (const chunk of process.stdin) input += chunk;
const parsed = JSON.parse(input);
try {
  const schema = buildClientSchema(parsed.data ?? parsed);
  const errors = validateSchema(schema);
  if (errors.length > 0) {
    console.error(errors.map((e) => e.message).join("\n"));
    process.exit(1);
  }
  process.stdout.write(printSchema(schema));
} catch (error) {
  console.error(error.message);
  process.exit(1);
}
