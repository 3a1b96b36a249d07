// Runs the DuckDB queries of docs/fleet.md with DuckDB's Node API
// (@duckdb/node-api: DuckDBInstance.create, connect, runAndReadAll,
// getRowObjectsJson; duckdb.org/docs/stable/clients/node_neo/overview).
//   node fleet_duckdb.mjs ENGINE_DIR QUERIES.json
// QUERIES.json: {"setup": [sql, ...], "queries": {name: sql}}. Prints
// {name: rows} as JSON (BIGINTs as strings, lists as arrays).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

const [engineDir, queriesPath] = process.argv.slice(2);
const require = createRequire(resolve(engineDir) + '/');
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);
const { setup, queries } = JSON.parse(readFileSync(queriesPath, 'utf8'));
const instance = await DuckDBInstance.create(':memory:');
const connection = await instance.connect();
for (const sql of setup) await connection.run(sql);
const out = {};
for (const [name, sql] of Object.entries(queries)) {
  const reader = await connection.runAndReadAll(sql);
  out[name] = reader.getRowObjectsJson();
}
console.log(JSON.stringify(out));
