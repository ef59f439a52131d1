// Apollo Client (its core, as a web app uses it, with the normalising InMemoryCache) against
// the router: an ordinary query, then the new fields with their examples and the prompts.
//   node apollo-client.mjs URL [TENANT]   prints what each query answered as JSON; exits 1
//     with the error when Apollo Client fails or reports one.
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client/core/index.js";

const [url, tenant] = process.argv.slice(2);
const client = new ApolloClient({
  link: new HttpLink({ uri: url, headers: tenant ? { "x-wayfinder-tenant": tenant } : {} }),
  cache: new InMemoryCache({
    possibleTypes: { __SchemaDefinition: ["__Type", "__Field", "__InputValue", "__EnumValue", "__Directive"] },
  }),
});

const queries = {
  ordinary: gql`{ me { id displayName } }`,
  search: gql`query Find($q: String!) {
    __search(query: $q, first: 3) {
      coordinate score
      definition {
        ... on __Field { name examples { operation description } }
        ... on __Type { name examples { operation description } }
        ... on __InputValue { name examples { operation description } }
        ... on __EnumValue { name examples { operation description } }
      }
    }
  }`,
  definitions: gql`{ __definitions(coordinates: ["Query.book", "BookFormat"]) {
    ... on __Field { name examples { operation description } }
    ... on __Type { name examples { operation description } }
  } }`,
  prompts: gql`{ __prompts { name description arguments { name type { kind name ofType { name } } } } }`,
};

const answered = {};
try {
  for (const [name, query] of Object.entries(queries)) {
    const result = await client.query({ query, variables: { q: "books a customer ordered" } });
    if (result.errors?.length) throw new Error(`${name}: ${JSON.stringify(result.errors)}`);
    answered[name] = result.data;
  }
} catch (error) {
  console.error(error.message ?? String(error));
  process.exit(1);
}
process.stdout.write(JSON.stringify(answered));
