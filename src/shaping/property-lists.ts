// `dropProperties` and `allowProperties` (docs/webhooks.md#shaping): paths of a webhook
// body, checked at load and compiled once into a tree; applied per call by copying only
// the objects on the way to what changes (the body's own objects are shared with the
// call and the other destinations, and never modified).

/** The fields a webhook body (docs/webhooks.md#body) can have: where a path may start. */
export const BODY_FIELDS: readonly string[] = [
  'version',
  'type',
  'userId',
  'anonymousId',
  'messageId',
  'timestamp',
  'event',
  'name',
  'category',
  'groupId',
  'properties',
  'traits',
  'context',
  'Previous ID',
  'User ID',
];

/** Where `allowProperties` paths live: only these objects are narrowed; the rest of the body stays. */
export const ALLOW_ROOTS: readonly string[] = ['properties', 'traits'];

/** A compiled list: each key maps to `true` (this key itself) or to the paths below it. */
export interface PathTree {
  [key: string]: PathTree | true;
}

export type PropertyList = { kind: 'drop'; tree: PathTree } | { kind: 'allow'; tree: PathTree };

/** What is wrong with one path of `list`, or undefined. */
export function propertyPathProblem(list: 'dropProperties' | 'allowProperties', path: string): string | undefined {
  const segments = path.split('.');
  if (segments.some((s) => s === '')) {
    return `${JSON.stringify(path)} is not a path: write the keys from the top of the body separated by dots, e.g. "context.ip" (no empty key, no leading or trailing dot)`;
  }
  const [first = ''] = segments;
  if (list === 'allowProperties' && !ALLOW_ROOTS.includes(first)) {
    return `${JSON.stringify(path)} is not under properties or traits: allowProperties keeps only the listed keys of properties and traits (the rest of the body stays); to remove anything else, use dropProperties instead`;
  }
  if (!BODY_FIELDS.includes(first)) {
    return `${JSON.stringify(path)} starts with ${JSON.stringify(first)}, which no webhook body has; a path starts with one of ${BODY_FIELDS.join(', ')}, e.g. "context.ip" or "properties.email"`;
  }
  return undefined;
}

function treeOf(paths: readonly string[]): PathTree {
  const tree: PathTree = Object.create(null) as PathTree;
  for (const path of paths) {
    const segments = path.split('.');
    let node = tree;
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]!;
      const here = node[segment];
      if (here === true) break; // a shorter path already names the whole of it
      if (i === segments.length - 1) {
        node[segment] = true;
        break;
      }
      const next = here ?? (Object.create(null) as PathTree);
      node[segment] = next;
      node = next;
    }
  }
  return tree;
}

/** Compiles a checked list (see propertyPathProblem). */
export function compilePropertyList(kind: 'drop' | 'allow', paths: readonly string[]): PropertyList {
  return { kind, tree: treeOf(paths) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An own property, even named "__proto__" (plain assignment would set the prototype instead). */
function put(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** `object` without the tree's paths; the same object when none of them is there. */
function drop(object: Record<string, unknown>, tree: PathTree): Record<string, unknown> {
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(object)) {
    const rule = Object.hasOwn(tree, key) ? tree[key] : undefined;
    const value = object[key];
    if (rule === true) {
      changed = true;
      continue;
    }
    if (rule !== undefined && isObject(value)) {
      const inner = drop(value, rule);
      if (inner !== value) changed = true;
      put(out, key, inner);
    } else {
      put(out, key, value);
    }
  }
  return changed ? out : object;
}

/** Only the tree's paths of `object`, in the object's own order. */
function keep(object: Record<string, unknown>, tree: PathTree): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(object)) {
    const rule = Object.hasOwn(tree, key) ? tree[key] : undefined;
    const value = object[key];
    if (rule === true) put(out, key, value);
    else if (rule !== undefined && isObject(value)) put(out, key, keep(value, rule));
  }
  return out;
}

const EMPTY: PathTree = Object.create(null) as PathTree;

/**
 * The body with the list applied. `drop`: the listed paths removed, wherever they are
 * (a path through something that is not an object removes nothing). `allow`: inside
 * `properties` and `traits`, only the listed paths kept (an object with none of them
 * becomes `{}`); every other field of the body as it was.
 */
export function applyPropertyList(body: Record<string, unknown>, list: PropertyList): Record<string, unknown> {
  if (list.kind === 'drop') return drop(body, list.tree);
  let out: Record<string, unknown> | undefined;
  for (const root of ALLOW_ROOTS) {
    const value = body[root];
    if (!Object.hasOwn(body, root) || !isObject(value)) continue;
    const rule = Object.hasOwn(list.tree, root) ? list.tree[root]! : EMPTY;
    if (rule === true) continue;
    out ??= { ...body };
    out[root] = keep(value, rule);
  }
  return out ?? body;
}
