// A synchronous evaluator for the everyday part of JSONata: paths through objects,
// literals, comparisons, `and`/`or`, arithmetic, `&`, `in`, `? :`, object constructors
// with literal keys and a few built-in functions. Everything else, and any input on
// which JSONata would do something subtle (a list on a path, a type error, a number
// that is not finite), is left to JSONata itself: `NEEDS_FULL_EVALUATION`.
//
// NOTE: why it exists. JSONata 2 evaluates asynchronously (every step is awaited), which
// costs a filter or a small transform more CPU per call than the router's own work on
// three destinations (measured with `npm run bench -- route`:
// docs/benchmarks.md#figures-behind-the-code; see docs/webhooks.md#shaping). This path
// gives the same answers many times faster. It never decides what JSONata would have
// refused: on any doubt it steps aside, and JSONata evaluates the whole expression again
// from the start. The answers are checked against JSONata's own by
// test/unit/shaping/fast-path.test.ts.
import type jsonata from 'jsonata';

/** Returned when JSONata itself must evaluate the expression on this input. */
export const NEEDS_FULL_EVALUATION: unique symbol = Symbol('needs full evaluation');
type Bail = typeof NEEDS_FULL_EVALUATION;
const BAIL: Bail = NEEDS_FULL_EVALUATION;

export type FastPath = (input: Record<string, unknown>) => unknown;
type Step = (input: Record<string, unknown>) => unknown;

/** A node of JSONata's syntax tree (`Expression.ast()`), as far as this file reads it. */
interface Node {
  type: string;
  value?: unknown;
  [key: string]: unknown;
}

/** The keys a node of each kind may have to be taken here; any other annotation (a predicate, a sort, a focus…) leaves it to JSONata. */
const KEYS: Record<string, readonly string[]> = {
  string: ['type', 'value', 'position'],
  number: ['type', 'value', 'position'],
  value: ['type', 'value', 'position'],
  name: ['type', 'value', 'position'],
  variable: ['type', 'value', 'position'],
  path: ['type', 'steps'],
  binary: ['type', 'value', 'position', 'lhs', 'rhs'],
  unary: ['type', 'value', 'position', 'expression', 'lhs', 'expressions'],
  condition: ['type', 'position', 'condition', 'then', 'else'],
  block: ['type', 'position', 'expressions'],
  function: ['type', 'value', 'position', 'arguments', 'procedure'],
};

function plain(node: Node): boolean {
  const allowed = KEYS[node.type];
  // (the parser gives every function call a `name` key, undefined unless it names a lambda)
  return allowed !== undefined && Object.keys(node).every((key) => allowed.includes(key) || (key === 'name' && node.name === undefined));
}

/**
 * The expression's fast path, or undefined when some part of it is outside what this
 * file evaluates (then every evaluation goes to JSONata).
 */
export function compileFastPath(ast: jsonata.ExprNode): FastPath | undefined {
  const compiled = compile(ast as unknown as Node);
  if (compiled === undefined) return undefined;
  return (input) => (Array.isArray(input) ? BAIL : compiled(input));
}

function compile(node: Node): Step | undefined {
  if (!plain(node)) return undefined;
  switch (node.type) {
    case 'string':
    case 'number':
    case 'value': {
      const value: unknown = node.value;
      return () => value;
    }
    case 'variable':
      // `$` (the context) and `$$` (the root) are both the body here.
      return node.value === '' || node.value === '$' ? (input) => input : undefined;
    case 'path':
      return compilePath(node);
    case 'binary':
      return compileBinary(node);
    case 'unary':
      return compileUnary(node);
    case 'condition':
      return compileCondition(node);
    case 'block':
      return compileBlock(node);
    case 'function':
      return stepOfCall(node);
    default:
      return undefined;
  }
}

/** A value as a path ends on it: lists and numbers JSON cannot hold go to JSONata. */
function settled(value: unknown): unknown {
  if (Array.isArray(value)) return BAIL;
  if (typeof value === 'number' && !Number.isFinite(value)) return BAIL;
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function compilePath(node: Node): Step | undefined {
  const steps = (node.steps ?? []) as Node[];
  if (steps.length === 0) return undefined;
  const names: string[] = [];
  steps.forEach((step, i) => {
    const root = i === 0 && step.type === 'variable' && (step.value === '' || step.value === '$') && plain(step);
    if (root) return;
    names.push(step.type === 'name' && plain(step) && typeof step.value === 'string' ? step.value : '\u0000');
  });
  if (names.includes('\u0000')) return undefined;
  return (input) => {
    let value: unknown = input;
    for (const name of names) {
      if (Array.isArray(value)) return BAIL;
      // JSONata's lookup: an own property of an object, else nothing.
      if (!isObject(value) || !Object.hasOwn(value, name)) return undefined;
      value = value[name];
    }
    return settled(value);
  };
}

/** JSONata's effective boolean of a value this path produced; a list or a function is left to JSONata. */
export function truthy(value: unknown): boolean | Bail {
  if (value === undefined || value === null) return false;
  switch (typeof value) {
    case 'string':
      return value.length > 0;
    case 'number':
      return value !== 0 && !Number.isNaN(value);
    case 'boolean':
      return value;
    case 'object':
      return Array.isArray(value) ? BAIL : Object.keys(value).length > 0;
    default:
      return BAIL;
  }
}

const COMPARE: Record<string, (a: number | string, b: number | string) => boolean> = {
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
};

const ARITHMETIC: Record<string, (a: number, b: number) => number> = {
  '+': (a, b) => a + b,
  '-': (a, b) => a - b,
  '*': (a, b) => a * b,
  '/': (a, b) => a / b,
  '%': (a, b) => a % b,
};

function compileBinary(node: Node): Step | undefined {
  const op = node.value as string;
  const lhs = compile(node.lhs as Node);
  if (lhs === undefined) return undefined;
  if (op === 'in') return compileIn(lhs, node.rhs as Node);
  const rhs = compile(node.rhs as Node);
  if (rhs === undefined) return undefined;
  if (op === 'and' || op === 'or') {
    const and = op === 'and';
    return (input) => {
      const l = lhs(input);
      if (l === BAIL) return BAIL;
      const left = truthy(l);
      if (left === BAIL) return BAIL;
      // JSONata does not evaluate the right side once the left decides.
      if (and ? !left : left) return left;
      const r = rhs(input);
      return r === BAIL ? BAIL : truthy(r);
    };
  }
  const operate = binaryOperation(op);
  if (operate === undefined) return undefined;
  return (input) => {
    const l = lhs(input);
    if (l === BAIL) return BAIL;
    const r = rhs(input);
    return r === BAIL ? BAIL : operate(l, r);
  };
}

function binaryOperation(op: string): ((l: unknown, r: unknown) => unknown) | undefined {
  if (op === '=' || op === '!=') {
    const equal = op === '=';
    return (l, r) => {
      if (l === undefined || r === undefined) return false;
      // Objects compare deeply in JSONata: left to it.
      if (typeof l === 'object' && l !== null) return BAIL;
      if (typeof r === 'object' && r !== null) return BAIL;
      return (l === r) === equal;
    };
  }
  const compare = COMPARE[op];
  if (compare !== undefined) {
    return (l, r) => {
      const lt = typeof l;
      const rt = typeof r;
      if ((lt !== 'undefined' && lt !== 'string' && lt !== 'number') || (rt !== 'undefined' && rt !== 'string' && rt !== 'number')) return BAIL;
      if (l === undefined || r === undefined) return undefined;
      if (lt !== rt) return BAIL;
      return compare(l as number | string, r as number | string);
    };
  }
  const arithmetic = ARITHMETIC[op];
  if (arithmetic !== undefined) {
    return (l, r) => {
      if ((l !== undefined && typeof l !== 'number') || (r !== undefined && typeof r !== 'number')) return BAIL;
      if (l === undefined || r === undefined) return undefined;
      const result = arithmetic(l as number, r as number);
      return Number.isFinite(result) ? result : BAIL;
    };
  }
  if (op === '&') {
    return (l, r) => {
      if ((l !== undefined && typeof l !== 'string') || (r !== undefined && typeof r !== 'string')) return BAIL;
      return (l ?? '') + (r ?? '');
    };
  }
  return undefined;
}

const LITERAL_TYPES = ['string', 'number', 'value'];

/** `x in ["a", "b"]` (a list of literals) or `x in y`. */
function compileIn(lhs: Step, rhsNode: Node): Step | undefined {
  let rhs: Step | undefined;
  if (rhsNode.type === 'unary' && rhsNode.value === '[' && plain(rhsNode)) {
    const items = (rhsNode.expressions ?? []) as Node[];
    if (!items.every((item) => LITERAL_TYPES.includes(item.type) && plain(item))) return undefined;
    const list: unknown[] = items.map((item) => item.value);
    rhs = () => list;
  } else {
    rhs = compile(rhsNode);
  }
  if (rhs === undefined) return undefined;
  const right = rhs;
  return (input) => {
    const l = lhs(input);
    if (l === BAIL) return BAIL;
    const r = right(input);
    if (r === BAIL) return BAIL;
    if (l === undefined || r === undefined) return false;
    return Array.isArray(r) ? r.includes(l) && !Number.isNaN(l) : r === l;
  };
}

function compileUnary(node: Node): Step | undefined {
  if (node.value === '-') {
    const operand = compile(node.expression as Node);
    if (operand === undefined) return undefined;
    return (input) => {
      const value = operand(input);
      if (value === BAIL || value === undefined) return value;
      return typeof value === 'number' && Number.isFinite(value) ? -value : BAIL;
    };
  }
  if (node.value === '{') return compileObject(node);
  return undefined;
}

/** `{"key": value, …}` with distinct literal keys: a value that matched nothing leaves its key out. */
function compileObject(node: Node): Step | undefined {
  const pairs = (node.lhs ?? []) as [Node, Node][];
  const keys: string[] = [];
  const values: Step[] = [];
  for (const [key, value] of pairs) {
    if (key.type !== 'string' || !plain(key) || typeof key.value !== 'string') return undefined;
    // JSONata refuses these keys and a key given twice: let it say so.
    if (keys.includes(key.value) || key.value === '_jsonata_lambda' || key.value === '_jsonata_function') return undefined;
    const step = compile(value);
    if (step === undefined) return undefined;
    keys.push(key.value);
    values.push(step);
  }
  // NOTE: a plain object, not JSONata's prototype-free one: the same keys in the same
  // order each call share one hidden class, which JSON.stringify writes fastest. A key
  // "__proto__" is defined as an own property, as JSONata has it.
  const define = keys.includes('__proto__');
  return (input) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) {
      const value = values[i]!(input);
      if (value === BAIL) return BAIL;
      if (value === undefined) continue;
      if (define && keys[i] === '__proto__') Object.defineProperty(out, '__proto__', { value, enumerable: true, writable: true, configurable: true });
      else out[keys[i]!] = value;
    }
    return out;
  };
}

function compileCondition(node: Node): Step | undefined {
  const condition = compile(node.condition as Node);
  const then = compile(node.then as Node);
  const otherwise = node.else === undefined ? () => undefined : compile(node.else as Node);
  if (condition === undefined || then === undefined || otherwise === undefined) return undefined;
  return (input) => {
    const c = condition(input);
    if (c === BAIL) return BAIL;
    const holds = truthy(c);
    if (holds === BAIL) return BAIL;
    return holds ? then(input) : otherwise(input);
  };
}

/** `( a; b )`: without bindings (left to JSONata), the value of the last expression. */
function compileBlock(node: Node): Step | undefined {
  const steps = ((node.expressions ?? []) as Node[]).map(compile);
  if (steps.length === 0 || steps.some((s) => s === undefined)) return undefined;
  const all = steps as Step[];
  return (input) => {
    let value: unknown;
    for (const step of all) {
      value = step(input);
      if (value === BAIL) return BAIL;
    }
    return value;
  };
}

/** Built-in functions taken here, by name: one argument each, but `$contains(text, "literal")`. */
const FUNCTIONS: Record<string, (value: unknown) => unknown> = {
  exists: (value) => value !== undefined,
  boolean: (value) => (value === undefined ? undefined : truthy(value)),
  not: (value) => {
    if (value === undefined) return undefined;
    const b = truthy(value);
    return b === BAIL ? BAIL : !b;
  },
  lowercase: (value) => (value === undefined ? undefined : typeof value === 'string' ? value.toLowerCase() : BAIL),
  uppercase: (value) => (value === undefined ? undefined : typeof value === 'string' ? value.toUpperCase() : BAIL),
};

function stepOfCall(node: Node): Step | undefined {
  const procedure = node.procedure as Node | undefined;
  if (procedure === undefined || procedure.type !== 'variable' || !plain(procedure) || node.value !== '(') return undefined;
  const args = (node.arguments ?? []) as Node[];
  const name = procedure.value as string;
  if (name === 'contains') return compileContains(args);
  const apply = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
  if (apply === undefined || args.length !== 1) return undefined;
  const arg = compile(args[0]!);
  if (arg === undefined) return undefined;
  return (input) => {
    const value = arg(input);
    return value === BAIL ? BAIL : apply(value);
  };
}

function compileContains(args: Node[]): Step | undefined {
  const [text, pattern] = args;
  if (args.length !== 2 || pattern === undefined || pattern.type !== 'string' || !plain(pattern)) return undefined;
  const arg = compile(text!);
  if (arg === undefined) return undefined;
  const token = pattern.value as string;
  return (input) => {
    const value = arg(input);
    if (value === BAIL || value === undefined) return value;
    return typeof value === 'string' ? value.includes(token) : BAIL;
  };
}
