// Sizes in config are strings with a unit ("512KB", "4MB"), like durations
// (duration.ts): a bare number could be bytes or kilobytes, so none is taken.
// NOTE: KB and MB are 1,024 and 1,048,576 bytes, as every byte limit of the project
// counts them (the gateway's 500 KB a request, a call's 32 KB).

const UNIT_BYTES = {
  B: 1,
  KB: 1_024,
  MB: 1_048_576,
} as const;

type Unit = keyof typeof UNIT_BYTES;

export const SIZE_PATTERN = /^(\d+(?:\.\d+)?)(B|KB|MB)$/;

/**
 * Bytes for `100B`, `512KB`, `1.5MB`, `4MB`; `undefined` for anything else (no spaces,
 * no bare numbers, no other units). A result must be a whole number of bytes.
 */
export function parseSize(text: string): number | undefined {
  const match = SIZE_PATTERN.exec(text);
  if (!match) return undefined;
  const [, amount, unit] = match as unknown as [string, string, Unit];
  const exact = Number(amount) * UNIT_BYTES[unit];
  const bytes = Math.round(exact);
  if (Math.abs(exact - bytes) > 1e-6 || !Number.isSafeInteger(bytes)) return undefined;
  return bytes;
}

/** The shortest exact text for `bytes` in the largest unit that divides it (`524288` → `512KB`). */
export function formatSize(bytes: number): string {
  if (bytes % UNIT_BYTES.MB === 0) return `${bytes / UNIT_BYTES.MB}MB`;
  if (bytes % UNIT_BYTES.KB === 0) return `${bytes / UNIT_BYTES.KB}KB`;
  return `${bytes}B`;
}
