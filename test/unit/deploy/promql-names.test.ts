import { describe, expect, it } from 'vitest';
import {
  PromqlScanError,
  exportedSeriesNames,
  grafanaQueryMetricNames,
  promqlMetricNames,
} from '../../support/promql-names.js';

describe('promqlMetricNames finds the metrics an expression reads', () => {
  const cases: Array<[string, string, string[]]> = [
    ['a bare selector', 'up', ['up']],
    ['a selector with matchers', 'up{job="switchyard", namespace=~"a|b"}', ['up']],
    ['label names and values are not metrics', 'x_total{destination="rate", outcome!~"sum|by"}', ['x_total']],
    ['a range and rate', 'rate(a_total[5m])', ['a_total']],
    ['Grafana range variables', 'rate(a_total{ns=~"$namespace"}[$__rate_interval])', ['a_total']],
    ['${var} forms', 'increase(a_total{d=~"${destination:regex}"}[${__range}])', ['a_total']],
    ['aggregation with by after', 'sum(rate(a_total[5m])) by (destination, le)', ['a_total']],
    ['aggregation with by before', 'sum by (destination) (rate(a_total[5m]))', ['a_total']],
    ['aggregation with without', 'max without (pod) (lag)', ['lag']],
    ['label lists that look like metrics', 'sum by (up, rate) (x)', ['x']],
    ['histogram_quantile over buckets',
      'histogram_quantile(0.99, sum by (le) (rate(d_seconds_bucket{job="s"}[5m])))', ['d_seconds_bucket']],
    ['binary operators and keywords',
      'a / b > 0.05 and on (namespace) c unless d or e', ['a', 'b', 'c', 'd', 'e']],
    ['vector matching with group_left',
      'a * on (pod) group_left (node) b', ['a', 'b']],
    ['group_left without a list', 'a * on (pod) group_left b', ['a', 'b']],
    ['comparison with bool', 'a > bool 1', ['a']],
    ['offset and @', 'a offset 15m unless b @ 1609746000 or c @ start()', ['a', 'b', 'c']],
    ['numbers and durations are not names', 'a[1h30m:1m] * 1e3 + 0x1f - .5 + Inf + NaN', ['a']],
    ['strings in label_replace', 'label_replace(kube_x{d=~".*-(a|b)"}, "role", "$1", "d", ".*-(a|b)")', ['kube_x']],
    ['count_values, topk and quantile', 'count_values("v", a) + topk(5, b) + quantile(0.9, c)', ['a', 'b', 'c']],
    ['vector() and scalar()', 'sum(a) or vector(0) * scalar(b)', ['a', 'b']],
    ['backtick and single-quoted strings', "a{x=`}\\`, y='{'} + b", ['a', 'b']],
    ['escaped quotes in strings', 'a{x="\\"}"} + b', ['a', 'b']],
    ['__name__ matcher', '{__name__="switchyard_x_total", job="s"}', ['switchyard_x_total']],
    ['a __name__ regex cannot be checked and is ignored', '{__name__=~"switchyard_.*"}', []],
    ['recording-rule names with colons', 'job:a_total:rate5m', ['job:a_total:rate5m']],
    ['each name once, in order', 'b + a + b', ['b', 'a']],
    ['comments', 'a # b is not read\n + c', ['a', 'c']],
    ['keywords are case-insensitive', 'a AND b OR c', ['a', 'b', 'c']],
    ['aggregation keyword case', 'sum BY (x) (a)', ['a']],
    ['subquery', 'max_over_time(deriv(a[5m])[1h:5m])', ['a']],
  ];
  it.each(cases)('%s', (_what, expr, expected) => {
    expect(promqlMetricNames(expr)).toEqual(expected);
  });
});

describe('promqlMetricNames refuses what it cannot check', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['an unknown function (a typo hides a metric)', 'rat(a_total[5m])', /unknown function "rat"/],
    ['an unterminated string', 'a{x="b}', /unterminated string/],
    ['an unclosed matcher', 'a{x="b"', /unclosed "\{"/],
    ['an unclosed range', 'rate(a[5m)', /unclosed "\["/],
    ['a stray closing brace', 'a}', /unbalanced "\}"/],
    ['unbalanced parentheses', 'sum(rate(a[5m])', /unbalanced parentheses/],
    ['a stray closing parenthesis', 'a)', /unbalanced "\)"/],
    ['a name built from a variable (after)', '${metric}_total', /built from a variable/],
    ['a name built from a variable (before)', 'switchyard_$kind', /built from a variable/],
  ];
  it.each(cases)('%s', (_what, expr, message) => {
    expect(() => promqlMetricNames(expr)).toThrow(PromqlScanError);
    expect(() => promqlMetricNames(expr)).toThrow(message);
  });
});

describe('grafanaQueryMetricNames reads template-variable queries', () => {
  const cases: Array<[string, string[]]> = [
    ['label_values(up{job="switchyard"}, namespace)', ['up']],
    ['label_values(switchyard_deliveries_total{namespace=~"$namespace"}, destination)', ['switchyard_deliveries_total']],
    ['label_values(namespace)', []],
    ['query_result(topk(5, sum by (destination) (rate(a_total[5m]))))', ['a_total']],
    ['label_names()', []],
    ['metrics(switchyard_.*)', []],
    ['sum by (destination) (a_total)', ['a_total']],
  ];
  it.each(cases)('%s', (query, expected) => {
    expect(grafanaQueryMetricNames(query)).toEqual(expected);
  });

  it('reports a label_values query whose metric part is a call of an unknown function', () => {
    expect(() => grafanaQueryMetricNames('label_values(rat(a[5m]), x)')).toThrow(/unknown function "rat"/);
  });
});

describe('exportedSeriesNames reads # TYPE lines of the text format', () => {
  it('expands histograms and summaries to their series and keeps counters and gauges', () => {
    const exposition = [
      '# HELP a_total A counter.',
      '# TYPE a_total counter',
      'a_total{x="1"} 3',
      '# HELP g A gauge.',
      '# TYPE g gauge',
      '# TYPE d_seconds histogram',
      'd_seconds_bucket{le="+Inf"} 0',
      '# TYPE s summary',
      '# TYPE u untyped',
      'not_declared 1',
      '# TYPE broken',
      '',
    ].join('\n');
    expect([...exportedSeriesNames(exposition)].sort()).toEqual(
      ['a_total', 'd_seconds_bucket', 'd_seconds_count', 'd_seconds_sum', 'g', 's', 's_count', 's_sum', 'u'].sort(),
    );
  });

  it('has no series named after a histogram family itself', () => {
    expect(exportedSeriesNames('# TYPE d_seconds histogram\n').has('d_seconds')).toBe(false);
  });
});
