/**
 * The links of Markdown documents, and whether they stay inside the repository.
 *
 * The rule the documentation keeps (checked by test/unit/docs/links.test.ts): no link
 * leaves the repository, so a clone is all a reader needs. A link is either relative
 * to its file, stays inside the repository root and names a file or folder that
 * exists, or is a `#anchor` that matches a heading of the Markdown file it points to.
 * URLs with a scheme (`https:`, `mailto:`), protocol-relative and absolute paths, and
 * bare `https://…` text (which GitHub turns into a link) are all refused.
 *
 * Pure apart from `checkLinks`, which reads the files the links point to. Only what
 * the docs use is understood: ATX headings, inline links and images, reference
 * definitions, angle-bracket autolinks, bare URLs and `<a href>`/`<img src>` tags;
 * code blocks and code spans are skipped.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';

export interface MarkdownLink {
  /** The target as written, e.g. `../config/example.yaml`, `webhooks.md#signatures`. */
  target: string;
  /** 1-based line of the link in its file. */
  line: number;
}

/** Replaces every character of `text` but newlines by a space, so offsets and lines keep. */
function blank(text: string): string {
  return text.replace(/[^\n]/g, ' ');
}

/** The document with fenced code blocks, indented code lines' content and code spans blanked out. */
export function withoutCode(markdown: string): string {
  const lines = markdown.split('\n');
  let fence: string | undefined;
  const kept = lines.map((line) => {
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence !== undefined) {
      if (opening && opening[1]!.startsWith(fence[0]!) && opening[1]!.length >= fence.length && line.trim() === opening[1]) fence = undefined;
      return blank(line);
    }
    if (opening) {
      fence = opening[1]!;
      return blank(line);
    }
    return line;
  });
  // Code spans: a run of backticks up to the next run of the same length.
  return kept.join('\n').replace(/(`+)[\s\S]*?\1/g, (span) => blank(span));
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

// [text](target "title") and ![alt](target); text may hold one level of [brackets].
const INLINE = /!?\[(?:[^[\]]|\[[^[\]]*\])*\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g;
// [label]: target
const DEFINITION = /^ {0,3}\[[^\]\n]+\]:\s*(<[^>\n]*>|\S+)/gm;
// <https://example.com>, <mailto:x@y>
const AUTOLINK = /<([a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^\s<>]*)>/g;
// GitHub's bare-URL autolinks.
const BARE_URL = /(?<![\w/(<[])(?:https?:\/\/|www\.)[^\s<>)]+/g;
const HTML_ATTRIBUTE = /<(?:a|img)\b[^>]*?\s(?:href|src)\s*=\s*("([^"]*)"|'([^']*)')/gi;

/** Every link of a Markdown document, in order, outside code. */
export function extractLinks(markdown: string): MarkdownLink[] {
  const text = withoutCode(markdown);
  const found: { target: string; offset: number }[] = [];
  for (const m of text.matchAll(INLINE)) found.push({ target: unangle(m[1]!), offset: m.index });
  for (const m of text.matchAll(DEFINITION)) found.push({ target: unangle(m[1]!), offset: m.index });
  // Autolinks and bare URLs are looked for where no inline link matched, so that the
  // target of [a](https://x) is not reported twice.
  const rest = text
    .replace(INLINE, (link) => blank(link))
    .replace(DEFINITION, (def) => blank(def))
    .replace(HTML_ATTRIBUTE, (tag) => blank(tag));
  for (const m of rest.matchAll(AUTOLINK)) found.push({ target: m[1]!, offset: m.index });
  const noAutolinks = rest.replace(AUTOLINK, (link) => blank(link));
  for (const m of noAutolinks.matchAll(BARE_URL)) found.push({ target: m[0], offset: m.index });
  for (const m of text.matchAll(HTML_ATTRIBUTE)) found.push({ target: m[2] ?? m[3] ?? '', offset: m.index });
  return found.sort((a, b) => a.offset - b.offset).map(({ target, offset }) => ({ target, line: lineAt(text, offset) }));
}

function unangle(target: string): string {
  return target.startsWith('<') && target.endsWith('>') ? target.slice(1, -1) : target;
}

/** GitHub's anchor for a heading text (as github-slugger makes it, before de-duplication). */
export function headingSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`/g, '')
    .replace(/\*+/g, '') // emphasis
    .trim()
    .toLowerCase();
  // Keep letters, marks, digits, connector punctuation (_), spaces and hyphens.
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The anchors of a document's ATX headings; a repeated slug gets `-1`, `-2`, … as on GitHub. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  const text = withoutCode(markdown);
  // Headings are read from the original lines (their code spans count as text) where
  // the code-free copy shows a heading, so `#` lines inside fences are skipped.
  const original = markdown.split('\n');
  text.split('\n').forEach((line, i) => {
    if (!/^ {0,3}#{1,6}(\s|$)/.test(line)) return;
    const heading = (original[i] ?? '').replace(/^ {0,3}#{1,6}\s*/, '').replace(/\s+#+\s*$/, '');
    const slug = headingSlug(heading);
    const seen = counts.get(slug) ?? 0;
    counts.set(slug, seen + 1);
    anchors.add(seen === 0 ? slug : `${slug}-${seen}`);
  });
  return anchors;
}

export interface LinkProblem {
  /** The document, relative to the root. */
  file: string;
  line: number;
  target: string;
  problem: string;
}

/**
 * Problems with the links of `files` (absolute paths of Markdown documents under
 * `root`): each says which link, where, and why it does not qualify.
 */
export function checkLinks(root: string, files: readonly string[]): { problems: LinkProblem[]; checked: number } {
  const problems: LinkProblem[] = [];
  let checked = 0;
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (file: string) => {
    let found = anchorsOf.get(file);
    if (found === undefined) {
      found = headingAnchors(readFileSync(file, 'utf8'));
      anchorsOf.set(file, found);
    }
    return found;
  };
  for (const file of files) {
    const where = relative(root, file);
    for (const link of extractLinks(readFileSync(file, 'utf8'))) {
      checked++;
      const problem = linkProblem(root, file, link.target, anchors);
      if (problem !== undefined) problems.push({ file: where, line: link.line, target: link.target, problem });
    }
  }
  return { problems, checked };
}

function linkProblem(root: string, file: string, target: string, anchors: (file: string) => Set<string>): string | undefined {
  if (target === '') return 'the link has no target';
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(target) || target.startsWith('//') || target.startsWith('www.')) {
    return 'leaves the repository: link to a file in the repository instead, or write the address as code';
  }
  if (target.startsWith('/') || isAbsolute(target)) return 'is an absolute path: make it relative to this file';
  const hash = target.indexOf('#');
  const pathPart = decodeURI(hash === -1 ? target : target.slice(0, hash)).replace(/\?.*$/, '');
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const resolved = pathPart === '' ? file : resolve(dirname(file), pathPart);
  const inside = relative(root, resolved);
  if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    return 'points outside the repository: everything a reader needs must be in it';
  }
  if (!existsSync(resolved)) return `no such file or folder: ${inside}`;
  if (anchor !== undefined) {
    if (!resolved.endsWith('.md') || statSync(resolved).isDirectory()) return `an anchor into ${inside}, which is not a Markdown file`;
    if (!anchors(resolved).has(anchor)) return `no heading with anchor "#${anchor}" in ${inside}`;
  }
  return undefined;
}
