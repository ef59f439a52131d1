const { composeServices } = require('@apollo/composition');
const { parse } = require('graphql');
const fs = require('fs'); const path = require('path');
// Composes examples/<name>/subgraphs/*.graphql into a supergraph on stdout (see examples/bookshop/README.md).
const dir = process.argv[2];
const urls = { accounts: 4001, catalog: 4002, orders: 4003, reviews: 4004 };
const services = Object.keys(urls).map(name => ({ name, url: `http://127.0.0.1:${urls[name]}/graphql`,
  typeDefs: parse(fs.readFileSync(path.join(dir, 'subgraphs', name + '.graphql'), 'utf8')) }));
const result = composeServices(services);
if (result.errors) { console.error(result.errors.map(e => e.toString()).join('\n')); process.exit(1); }
process.stdout.write(result.supergraphSdl);
