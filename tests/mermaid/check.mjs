// Parses flowcharts with mermaid's own parser (in a DOM of jsdom's, which
// mermaid needs even to parse): reads a JSON list of {"name", "text"} on
// stdin, prints each that does not parse and why, and exits 1 if any.
import fs from 'node:fs';
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');

const diagrams = JSON.parse(fs.readFileSync(0, 'utf8'));
let failed = 0;
for (const { name, text } of diagrams) {
  try {
    const parsed = await mermaid.parse(text);
    if (!parsed || !String(parsed.diagramType).startsWith('flowchart')) {
      throw new Error(`parsed as ${parsed && parsed.diagramType}, not a flowchart`);
    }
  } catch (e) {
    failed += 1;
    console.log(`${name}: ${e.message}`);
  }
}
console.log(`${diagrams.length - failed} of ${diagrams.length} diagrams parse`);
process.exit(failed ? 1 : 0);
