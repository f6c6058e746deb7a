// What every string the API takes in must be, and how deep a JSON body may nest. Postgres refuses
// NUL in text and jsonb, and jsonb refuses a lone surrogate: such a string must be refused at the
// door (400 naming its field), never reach a write. A control character (C0, DEL, C1) has no place
// in an id, a name or a seat either.

/** Control characters (Unicode Cc: U+0000–U+001F, U+007F–U+009F) and lone surrogates (Cs, unpaired). */
const BAD_TEXT = /[\p{Cc}\p{Cs}]/u;

/** How deep a JSON body may nest (the deepest body of the contract is 3). */
export const MAX_JSON_DEPTH = 32;

export interface FieldError {
  field: string;
  message: string;
}

export const TEXT_MESSAGE = 'must not contain control characters or lone surrogates';

/** True when `s` has a control character or a lone surrogate. */
export function isBadText(s: string): boolean {
  return BAD_TEXT.test(s);
}

const fieldName = (path: string[]): string => (path.length ? path.join('.') : 'body');

/**
 * The first faults of a parsed JSON value: nesting deeper than `maxDepth`, and (unless `depthOnly`)
 * strings or property names with control characters or lone surrogates, each named by its path
 * (`units.3`, `waitingRoom.name`). Iterative, so no nesting can exhaust the stack. Paths listed in
 * `skip` (top-level field names) are not checked for text: their route sanitises them.
 */
export function inspectJson(
  value: unknown,
  opts: { maxDepth?: number; depthOnly?: boolean; skip?: readonly string[]; limit?: number } = {},
): FieldError[] {
  const maxDepth = opts.maxDepth ?? MAX_JSON_DEPTH;
  const limit = opts.limit ?? 20;
  const errors: FieldError[] = [];
  const stack: { value: unknown; path: string[] }[] = [{ value, path: [] }];
  while (stack.length > 0 && errors.length < limit) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (!opts.depthOnly && isBadText(v) && !(path.length === 1 && opts.skip?.includes(path[0]))) {
        errors.push({ field: fieldName(path), message: TEXT_MESSAGE });
      }
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (path.length >= maxDepth) {
      // One error for the whole subtree: its deeper levels are not looked at.
      errors.push({ field: 'body', message: `must not nest deeper than ${maxDepth} levels` });
      break;
    }
    const entries: [string, unknown][] = Array.isArray(v)
      ? v.map((item, i) => [String(i), item])
      : Object.entries(v as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i];
      if (!opts.depthOnly && isBadText(key)) {
        errors.push({
          field: fieldName(path),
          message: 'has a property name with control characters or lone surrogates',
        });
        continue;
      }
      stack.push({ value: item, path: [...path, key] });
    }
  }
  return errors;
}
