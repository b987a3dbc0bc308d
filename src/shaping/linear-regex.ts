// Regular expressions of shaping expressions through a linear-time engine (re2js, a pure
// JavaScript port of RE2): JSONata takes its regex engine as an option (`RegexEngine`),
// so `$match`, `$replace`, `$split` and `$contains` with a `/regex/` run in time linear
// in their input. NOTE: V8's own engine backtracks: `/(a+)+$/` took seconds on a few
// dozen characters in one evaluation step, which no step bound sees
// (docs/benchmarks.md#figures-behind-the-code). A pattern RE2 cannot run
// (a backreference, a lookaround) is refused when the config is loaded (regexProblems).
import { RE2JS } from 're2js';

/** The RE2 flags of a JSONata regex literal's flags (`i`, `m`; JSONata adds `g` itself). */
function flagsOf(native: RegExp): number {
  let flags = 0;
  if (native.ignoreCase) flags |= RE2JS.CASE_INSENSITIVE;
  if (native.multiline) flags |= RE2JS.MULTILINE;
  return flags;
}

/** `native` compiled by RE2, or why it cannot be (a pattern only a backtracking engine runs). */
export function compileLinear(native: RegExp): { ok: true; pattern: RE2JS } | { ok: false; error: string } {
  try {
    return { ok: true, pattern: RE2JS.compile(native.source, flagsOf(native)) };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

/**
 * What JSONata's evaluator asks of a regex engine: `new Engine(regexLiteral)`, then
 * `lastIndex` and `exec(text)` as a global RegExp has them (match, groups, `index`).
 */
export class LinearRegExp {
  lastIndex = 0;
  private readonly pattern: RE2JS;

  constructor(native: RegExp) {
    const compiled = compileLinear(native);
    // Refused at load (regexProblems); a config built by hand may still get here.
    if (!compiled.ok) throw { code: 'regex', message: `the regex /${native.source}/ needs a backtracking engine (${compiled.error}); write it without backreferences or lookarounds` };
    this.pattern = compiled.pattern;
  }

  exec(text: string): (string[] & { index: number }) | null {
    const matcher = this.pattern.matcher(text);
    if (this.lastIndex > text.length || !matcher.find(this.lastIndex)) {
      this.lastIndex = 0;
      return null;
    }
    const match = [matcher.group() ?? ''] as string[] & { index: number };
    for (let group = 1; group <= matcher.groupCount(); group++) match.push(matcher.group(group) ?? (undefined as unknown as string));
    match.index = matcher.start();
    this.lastIndex = matcher.end();
    return match;
  }
}

/** Each regex literal of a compiled expression's syntax tree that RE2 cannot run, with why. */
export function regexProblems(ast: unknown): string[] {
  const problems: string[] = [];
  const seen = new Set<object>();
  const visit = (node: unknown): void => {
    if (typeof node !== 'object' || node === null || seen.has(node) || node instanceof RegExp) return;
    seen.add(node);
    const { type, value, position } = node as { type?: unknown; value?: unknown; position?: unknown };
    if (type === 'regex' && value instanceof RegExp) {
      const compiled = compileLinear(value);
      if (!compiled.ok) {
        const at = typeof position === 'number' ? ` (at character ${position})` : '';
        problems.push(`the regex /${value.source}/${at} needs a backtracking engine (${compiled.error}): write it without backreferences or lookarounds`);
      }
    }
    for (const child of Object.values(node)) visit(child);
  };
  visit(ast);
  return problems;
}
