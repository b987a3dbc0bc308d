// The Dockerfile, read as written (no builder needed): what it copies exists and is not
// left out of the build context by .dockerignore, its Node satisfies package.json's
// engines, and the image runs the way the manifests expect (entrypoint, user, config
// path). scripts/check-image.sh builds it and starts it where a builder and the base
// image's registry are reachable (docs/operations.md#build-and-push-the-image).
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

/** The instructions of a Dockerfile: comments and blank lines dropped, `\` continuations joined. */
function dockerfileInstructions(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending: { text: string; line: number } | undefined;
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (pending === undefined && (line === '' || line.startsWith('#'))) return;
    if (pending !== undefined && line.startsWith('#')) return;
    const text = line.endsWith('\\') ? line.slice(0, -1) : line;
    pending = pending === undefined ? { text, line: index + 1 } : { text: `${pending.text} ${text}`, line: pending.line };
    if (line.endsWith('\\')) return;
    const [keyword = '', ...rest] = pending.text.split(/\s+/);
    instructions.push({ keyword: keyword.toUpperCase(), args: rest.join(' '), line: pending.line });
    pending = undefined;
  });
  return instructions;
}

const instructions = dockerfileInstructions(readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8'));
const stages = instructions.reduce<Instruction[][]>((all, instruction) => {
  if (instruction.keyword === 'FROM') all.push([]);
  all.at(-1)?.push(instruction);
  return all;
}, []);
const runtime = stages.at(-1) ?? [];
const of = (stage: Instruction[], keyword: string) => stage.filter((i) => i.keyword === keyword);

describe('dockerfileInstructions', () => {
  it('joins continued lines, drops comments, keeps the first line number', () => {
    expect(dockerfileInstructions('# c\nFROM a AS b\n\nRUN x \\\n  # inside\n  && y\nUSER 1:1\n')).toEqual([
      { keyword: 'FROM', args: 'a AS b', line: 2 },
      { keyword: 'RUN', args: 'x && y', line: 4 },
      { keyword: 'USER', args: '1:1', line: 7 },
    ]);
  });
});

describe('Dockerfile', () => {
  it('has a build stage and a runtime stage on the same Node base image, an ARG with a default', () => {
    expect(stages).toHaveLength(2);
    const arg = instructions.find((i) => i.keyword === 'ARG' && i.args.startsWith('NODE_IMAGE='));
    expect(arg, 'ARG NODE_IMAGE=… before the first FROM').toBeDefined();
    expect(instructions.indexOf(arg!)).toBeLessThan(instructions.findIndex((i) => i.keyword === 'FROM'));
    expect(stages.map((stage) => stage[0]!.args.split(' ')[0])).toEqual(['${NODE_IMAGE}', '${NODE_IMAGE}']);
  });

  it("runs a Node that satisfies package.json's engines.node", () => {
    const image = instructions.find((i) => i.keyword === 'ARG' && i.args.startsWith('NODE_IMAGE='))!.args.slice('NODE_IMAGE='.length);
    const major = Number(/^node:(\d+)[-.]/.exec(image)?.[1]);
    const engines = (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    const minimum = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(engines);
    expect(minimum, engines).not.toBeNull();
    // A newer major than the minimum's is newer than any of its minors; the same major would need its minor checked.
    expect(major).toBeGreaterThan(Number(minimum![1]));
  });

  it('copies only what exists and what .dockerignore lets into the build context', () => {
    const ignored = readFileSync(resolve(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    const copies = stages.flatMap((stage) => of(stage, 'COPY')).filter((i) => !i.args.startsWith('--from'));
    expect(copies.length).toBeGreaterThan(3);
    const sources = copies.flatMap((i) => i.args.split(' ').slice(0, -1));
    for (const source of sources) {
      expect(existsSync(resolve(ROOT, source)), `${source} exists`).toBe(true);
      expect(ignored.filter((pattern) => source === pattern || source.startsWith(`${pattern}/`)), `${source} is in the build context`).toEqual([]);
    }
    // What the runtime needs: the compiled code from the build stage, the example configs, the licence.
    expect(of(runtime, 'COPY').map((i) => i.args)).toEqual(
      expect.arrayContaining(['--from=build /app/dist ./dist', 'config ./config', 'LICENSE ./']),
    );
  });

  it('starts switchyard as the non-root user the manifests run it as, with the config path they mount', () => {
    expect(of(runtime, 'ENTRYPOINT').map((i) => i.args)).toEqual(['["switchyard"]']);
    const [user] = of(runtime, 'USER').map((i) => i.args);
    const [uid, gid] = (user ?? '').split(':').map(Number);
    const cmd = JSON.parse(of(runtime, 'CMD')[0]!.args) as string[];
    for (const role of ['gateway', 'router', 'deliverer']) {
      const deployment = parseAllDocuments(readFileSync(resolve(ROOT, `deploy/kubernetes/base/deployment-${role}.yaml`), 'utf8'))[0]!.toJS() as {
        spec: { template: { spec: { securityContext: { runAsUser: number; runAsGroup: number }; containers: { image: string; args: string[] }[] } } };
      };
      const pod = deployment.spec.template.spec;
      expect(pod.securityContext).toMatchObject({ runAsUser: uid, runAsGroup: gid });
      expect(pod.containers[0]!.args).toEqual([role, ...cmd.slice(1)]);
    }
    expect(uid).toBeGreaterThan(0);
  });
});
