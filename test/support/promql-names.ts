// Finds the metric names a PromQL expression reads, so that tests can check the
// dashboard and the alert rules against what the daemon really exports.
//
// A small scanner, not a parser: it skips strings, comments, label matchers
// (`{...}`), ranges and subqueries (`[...]`), numbers and durations, Grafana
// variables (`$x`, `${x}`, `$__rate_interval`) and the label lists after
// by/without/on/ignoring/group_left/group_right. Every identifier left is a
// function, an aggregation, a keyword or a metric name. `{__name__="x"}` counts as
// metric x. A call of a function PromQL does not have is an error, so that a typo
// like `rat(...)` cannot hide a metric name.

/** PromQL functions (Prometheus 2.x and 3.x) and Grafana's template-query functions. */
const FUNCTIONS = new Set([
  'abs', 'absent', 'absent_over_time', 'acos', 'acosh', 'asin', 'asinh', 'atan', 'atanh',
  'avg_over_time', 'ceil', 'changes', 'clamp', 'clamp_max', 'clamp_min', 'cos', 'cosh',
  'count_over_time', 'day_of_month', 'day_of_week', 'day_of_year', 'days_in_month', 'deg',
  'delta', 'deriv', 'double_exponential_smoothing', 'exp', 'floor', 'histogram_avg',
  'histogram_count', 'histogram_fraction', 'histogram_quantile', 'histogram_stddev',
  'histogram_stdvar', 'histogram_sum', 'holt_winters', 'hour', 'idelta', 'increase', 'info',
  'irate', 'label_join', 'label_replace', 'last_over_time', 'ln', 'log10', 'log2',
  'mad_over_time', 'max_over_time', 'min_over_time', 'minute', 'month', 'pi',
  'predict_linear', 'present_over_time', 'quantile_over_time', 'rad', 'rate', 'resets',
  'round', 'scalar', 'sgn', 'sin', 'sinh', 'sort', 'sort_by_label', 'sort_by_label_desc',
  'sort_desc', 'sqrt', 'stddev_over_time', 'stdvar_over_time', 'sum_over_time', 'tan', 'tanh',
  'time', 'timestamp', 'vector', 'year',
  // `@ start()` / `@ end()`
  'start', 'end',
]);

/** Aggregation operators: `sum(x)`, `sum by (l) (x)`, `sum without (l) (x)`. */
const AGGREGATIONS = new Set([
  'sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values',
  'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio',
]);

/** Keywords followed by a parenthesised list of label names. */
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

/** Keywords that stand alone (matched case-insensitively, as PromQL does). */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2', 'inf', 'nan', 'group_left', 'group_right']);

export class PromqlScanError extends Error {
  readonly code = 'promql_scan_error';
  constructor(message: string, readonly expr: string) {
    super(`${message} in: ${expr}`);
    this.name = 'PromqlScanError';
  }
}

const isIdentStart = (c: string): boolean => /[A-Za-z_:]/.test(c);
const isIdentPart = (c: string): boolean => /[A-Za-z0-9_:]/.test(c);

/** Index just past the string literal that starts at `start` (quote included). */
function skipString(expr: string, start: number): number {
  const quote = expr[start];
  let i = start + 1;
  while (i < expr.length) {
    const c = expr[i];
    if (c === '\\' && quote !== '`') {
      i += 2;
      continue;
    }
    if (c === quote) return i + 1;
    i += 1;
  }
  throw new PromqlScanError(`unterminated string starting at ${start}`, expr);
}

/** Index just past the bracket that closes the one at `start`, strings skipped. */
function skipBracketed(expr: string, start: number, open: string, close: string): number {
  let depth = 0;
  let i = start;
  while (i < expr.length) {
    const c = expr[i]!;
    if (c === '"' || c === "'" || c === '`') {
      i = skipString(expr, i);
      continue;
    }
    if (c === open) depth += 1;
    if (c === close) {
      depth -= 1;
      if (depth === 0) return i + 1;
    }
    i += 1;
  }
  throw new PromqlScanError(`unclosed "${open}" at ${start}`, expr);
}

function skipSpace(expr: string, start: number): number {
  let i = start;
  while (i < expr.length && /\s/.test(expr[i]!)) i += 1;
  return i;
}

/** The metric name of a `__name__="x"` matcher inside `{...}`, if any. */
function nameMatcher(matchers: string): string | undefined {
  const match = /(?:^|[{,\s])__name__\s*=\s*(["'`])([A-Za-z_:][A-Za-z0-9_:]*)\1/.exec(matchers);
  return match?.[2];
}

/** The metric names `expr` reads, each once, in order of first use. */
export function promqlMetricNames(expr: string): string[] {
  const names: string[] = [];
  const add = (name: string): void => {
    if (!names.includes(name)) names.push(name);
  };
  let i = 0;
  let parens = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (/\s/.test(c)) {
      i += 1;
    } else if (c === '"' || c === "'" || c === '`') {
      i = skipString(expr, i);
    } else if (c === '#') {
      const end = expr.indexOf('\n', i);
      i = end === -1 ? expr.length : end + 1;
    } else if (c === '{') {
      const end = skipBracketed(expr, i, '{', '}');
      const name = nameMatcher(expr.slice(i + 1, end - 1));
      if (name) add(name);
      i = end;
    } else if (c === '[') {
      i = skipBracketed(expr, i, '[', ']');
    } else if (c === '}' || c === ']') {
      throw new PromqlScanError(`unbalanced "${c}" at ${i}`, expr);
    } else if (c === '$') {
      // Grafana variables: ${name}, ${name:format}, $name, $__interval.
      if (expr[i + 1] === '{') {
        const end = expr.indexOf('}', i);
        if (end === -1) throw new PromqlScanError(`unclosed "\${" at ${i}`, expr);
        i = end + 1;
      } else {
        i += 1;
        while (i < expr.length && /[A-Za-z0-9_]/.test(expr[i]!)) i += 1;
      }
      if (isIdentPart(expr[i] ?? '')) {
        throw new PromqlScanError(`a metric name built from a variable cannot be checked (at ${i})`, expr);
      }
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(expr[i + 1] ?? ''))) {
      // Numbers and durations: 0.99, 1e3, 0x1f, 5m, 1h30m.
      i += 1;
      while (i < expr.length && /[0-9A-Za-z_.]/.test(expr[i]!)) i += 1;
    } else if (isIdentStart(c)) {
      let end = i + 1;
      while (end < expr.length && isIdentPart(expr[end]!)) end += 1;
      const word = expr.slice(i, end);
      if (expr[end] === '$') {
        throw new PromqlScanError(`a metric name built from a variable cannot be checked (at ${end})`, expr);
      }
      const lower = word.toLowerCase();
      const next = skipSpace(expr, end);
      const followedByParen = expr[next] === '(';
      if (LABEL_LIST_KEYWORDS.has(lower) && followedByParen) {
        i = skipBracketed(expr, next, '(', ')');
        continue;
      }
      i = end;
      if (KEYWORDS.has(lower) || LABEL_LIST_KEYWORDS.has(lower)) continue;
      if (AGGREGATIONS.has(word)) {
        const after = /^(by|without)\b/i.exec(expr.slice(next));
        if (followedByParen || after) continue;
      }
      if (followedByParen) {
        if (!FUNCTIONS.has(word)) throw new PromqlScanError(`unknown function "${word}"`, expr);
        continue;
      }
      add(word);
    } else {
      if (c === '(') parens += 1;
      if (c === ')') parens -= 1;
      if (parens < 0) throw new PromqlScanError(`unbalanced ")" at ${i}`, expr);
      i += 1;
    }
  }
  if (parens !== 0) throw new PromqlScanError('unbalanced parentheses', expr);
  return names;
}

/** Series names a scrape exposes, from its `# TYPE name type` lines. */
export function exportedSeriesNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    const match = /^# TYPE ([A-Za-z_:][A-Za-z0-9_:]*) (counter|gauge|histogram|summary|untyped)\s*$/.exec(line);
    if (!match) continue;
    const family = match[1]!;
    const type = match[2]!;
    if (type === 'histogram') {
      // A histogram family has no series of its own name, only these three.
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(family + suffix);
    } else if (type === 'summary') {
      for (const suffix of ['', '_sum', '_count']) names.add(family + suffix);
    } else {
      // prom-client's text format names counters with their _total suffix already.
      names.add(family);
    }
  }
  return names;
}

/**
 * The metric names of a Grafana Prometheus template-variable query:
 * `label_values(selector, label)`, `label_values(label)`, `query_result(expr)`,
 * `label_names()`, `metrics(regex)`, or a plain PromQL expression.
 */
export function grafanaQueryMetricNames(query: string): string[] {
  const text = query.trim();
  const labelValues = /^label_values\(([\s\S]*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)$/.exec(text);
  if (labelValues) return promqlMetricNames(labelValues[1]!);
  if (/^label_values\(\s*[A-Za-z_][A-Za-z0-9_]*\s*\)$/.test(text)) return [];
  const queryResult = /^query_result\(([\s\S]*)\)$/.exec(text);
  if (queryResult) return promqlMetricNames(queryResult[1]!);
  if (/^(label_names|metrics)\(/.test(text)) return [];
  return promqlMetricNames(text);
}
