// The documentation stands on its own: every link in README.md and docs/ stays inside
// the repository, names a file that exists, and every #anchor matches a heading.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkLinks, extractLinks, headingAnchors, headingSlug } from '../../support/markdown-links.js';

const ROOT = resolve(import.meta.dirname, '../../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

describe('the documentation links', () => {
  const files = [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs'))];

  it('covers README.md and the docs, which link into each other', () => {
    expect(files).toContain(join(ROOT, 'docs', 'README.md'));
    expect(files.length).toBeGreaterThanOrEqual(10);
    const readmeTargets = extractLinks(readFileSync(join(ROOT, 'README.md'), 'utf8')).map((l) => l.target);
    expect(readmeTargets).toContain('docs/README.md');
  });

  it('never leave the repository, and every target and anchor exists', () => {
    const { problems, checked } = checkLinks(ROOT, files);
    // A check that saw no links would pass on anything.
    expect(checked).toBeGreaterThan(50);
    expect(problems.map((p) => `${p.file}:${p.line}: ${p.target}: ${p.problem}`)).toEqual([]);
  });
});

describe('extractLinks', () => {
  const cases: Array<[string, string, string[]]> = [
    ['an inline link', 'see [the API](http-api.md) here', ['http-api.md']],
    ['an image and a title', '![d](img/a.png "A") and [b](b.md \'B\')', ['img/a.png', 'b.md']],
    ['brackets in the text', '[the `[x]` form](a.md#x)', ['a.md#x']],
    ['angle brackets around the target', '[a](<my file.md>)', ['my file.md']],
    ['a reference definition', '[ref]: ../config/example.yaml\n\nuse [it][ref]', ['../config/example.yaml']],
    ['an autolink', 'mail <mailto:ops@example.com> or <https://example.com/x>', ['mailto:ops@example.com', 'https://example.com/x']],
    ['a bare URL', 'go to https://example.com/x. Or www.example.org', ['https://example.com/x.', 'www.example.org']],
    ['an HTML link', '<a href="https://example.com">x</a> <img src=\'a.png\'>', ['https://example.com', 'a.png']],
    ['nothing in code spans', 'use `[a](b.md)` and ``https://x``', []],
    ['nothing in fenced code', '```\n[a](b.md) https://x\n```\n~~~js\n[c](d.md)\n~~~\n[e](f.md)', ['f.md']],
    ['a parenthesised URL part', '[w](a_(b).md)', ['a_(b).md']],
  ];
  it.each(cases)('%s', (_name, markdown, targets) => {
    expect(extractLinks(markdown).map((l) => l.target)).toEqual(targets);
  });

  it('gives the line of each link', () => {
    expect(extractLinks('# T\n\ntext\n[a](a.md)\n\n```\n[x](x.md)\n```\n[b](b.md)')).toEqual([
      { target: 'a.md', line: 4 },
      { target: 'b.md', line: 9 },
    ]);
  });
});

describe('headingSlug and headingAnchors (as GitHub makes them)', () => {
  it.each([
    ['Operations runbook', 'operations-runbook'],
    ['`npm start`', 'npm-start'],
    ['`POST /v1/deletions`', 'post-v1deletions'],
    ['Permissions (ACLs)', 'permissions-acls'],
    ['200 with `invalid`', '200-with-invalid'],
    ['Dead letters: list and replay', 'dead-letters-list-and-replay'],
    ['SwitchyardDeliverySuccessRateLow (warning) / SwitchyardDeliverySuccessRateCritical (critical)', 'switchyarddeliverysuccessratelow-warning--switchyarddeliverysuccessratecritical-critical'],
    ['Client library: `switchyard-client`', 'client-library-switchyard-client'],
    ['snake_case **names**', 'snake_case-names'],
    ['A [linked](x.md) heading', 'a-linked-heading'],
  ])('%s → #%s', (heading, slug) => {
    expect(headingSlug(heading)).toBe(slug);
  });

  it('numbers repeated headings and skips # lines in code', () => {
    expect([...headingAnchors('# A\n## Dup\n### Dup\n```\n# not a heading\n```\n## B ##\n#nospace')]).toEqual(['a', 'dup', 'dup-1', 'b']);
  });
});

describe('checkLinks', () => {
  // A small repository: root/README.md, root/docs/a.md, root/docs/b.md, root/config/x.yaml.
  const root = mkdtempSync(join(tmpdir(), 'links-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'docs'));
  mkdirSync(join(root, 'config'));
  writeFileSync(join(root, 'config', 'x.yaml'), 'a: 1\n');
  writeFileSync(join(root, 'docs', 'b.md'), '# B\n\n## The part\n');
  writeFileSync(join(root, 'outside.md'), '# Out\n');

  const problemsOf = (markdown: string) => {
    writeFileSync(join(root, 'docs', 'a.md'), `# A\n\n## Here\n\n${markdown}\n`);
    return checkLinks(root, [join(root, 'docs', 'a.md')]).problems.map((p) => p.problem);
  };

  it.each([
    ['a sibling document', '[b](b.md)'],
    ['an anchor in it', '[b](b.md#the-part)'],
    ['an anchor in this document', '[here](#here)'],
    ['a file up and over', '[x](../config/x.yaml)'],
    ['a folder', '[config](../config/)'],
    ['the root README one level up, when it exists', '[out](../outside.md#out)'],
  ])('accepts %s', (_name, markdown) => {
    expect(problemsOf(markdown)).toEqual([]);
  });

  it.each([
    ['an https link', '[s](https://www.standardwebhooks.com/)', /leaves the repository/],
    ['a bare URL', 'see https://example.com', /leaves the repository/],
    ['a mailto link', '[m](mailto:a@b.c)', /leaves the repository/],
    ['a protocol-relative link', '[p](//example.com/x)', /leaves the repository/],
    ['an absolute path', '[e](/etc/passwd)', /absolute path/],
    ['a path out of the repository', '[d](../../shared/DESIGN.md)', /outside the repository/],
    ['a missing file', '[c](c.md)', /no such file or folder: docs\/c\.md/],
    ['a missing anchor in another document', '[b](b.md#no-such-part)', /no heading with anchor "#no-such-part" in docs\/b\.md/],
    ['a missing anchor in this document', '[x](#nowhere)', /no heading with anchor "#nowhere" in docs\/a\.md/],
    ['an anchor into a file that is not Markdown', '[x](../config/x.yaml#a)', /not a Markdown file/],
    ['an empty target', '[x]()', /no target/],
  ])('refuses %s', (_name, markdown, problem) => {
    const problems = problemsOf(markdown);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(problem);
  });
});
