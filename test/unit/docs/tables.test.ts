// Every table of README.md and the docs renders as a table on GitHub: no header row glued
// under another table (rendered as a data row), no header and delimiter row that
// disagree on their cells (rendered as text).
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tableProblems } from '../../support/markdown-tables.js';

const ROOT = resolve(import.meta.dirname, '../../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

describe('the tables of README.md, docs/, examples/ and the client package', () => {
  const files = [join(ROOT, 'README.md'), ...['docs', 'examples', 'packages/client'].flatMap((dir) => markdownFiles(join(ROOT, dir)))];

  it('all render as tables', () => {
    const tables = files.reduce((count, file) => count + (readFileSync(file, 'utf8').match(/^\|[-:| ]+\|$/gm)?.length ?? 0), 0);
    // A check that saw no tables would pass on anything.
    expect(tables).toBeGreaterThan(30);
    const problems = files.flatMap((file) => tableProblems(readFileSync(file, 'utf8')).map((p) => `${relative(ROOT, file)}:${p.line}: ${p.problem}`));
    expect(problems).toEqual([]);
  });
});

describe('tableProblems', () => {
  const table = '| a | b |\n|---|---|\n| 1 | 2 |';

  it.each([
    ['one table', table],
    ['two tables with a blank line between', `${table}\n\n${table}`],
    ['a table after text and a blank line', `Text.\n\n${table}`],
    ['aligned cells and no outer pipes', 'a | b\n:--|--:\n1 | 2'],
    ['an escaped pipe in a cell', '| a \\| b | c |\n|---|---|\n| 1 | 2 |'],
    ['a table in a fenced code block, glued to another', `\`\`\`\n${table}\n${table}\n\`\`\``],
    ['a horizontal rule', 'Text\n\n---\n\nMore'],
  ])('accepts %s', (_name, markdown) => {
    expect(tableProblems(markdown)).toEqual([]);
  });

  it.each([
    ['a header row directly under another table', `${table}\n${table}`, 5, /table header on line 4 sits directly under a row of the table above/],
    ['a header with more cells than its delimiter row', '| a | b | c |\n|---|---|\n| 1 | 2 |', 2, /header row has 3 cells and the delimiter row 2/],
  ])('refuses %s', (_name, markdown, line, problem) => {
    const problems = tableProblems(markdown);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.line).toBe(line);
    expect(problems[0]!.problem).toMatch(problem);
  });
});
