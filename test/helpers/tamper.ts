/**
 * A signed token (a JWT, a room ticket: the signature after the last '.') with its signature's first
 * character changed to one it is not. All six bits of the first character count (the last one's low
 * bits may not), so the result is always another, invalid signature: setting the last two characters
 * to fixed ones left a signature that already ended so valid, once in 4,096.
 */
export function alterSignature(token: string): string {
  const at = token.lastIndexOf('.') + 1;
  return `${token.slice(0, at)}${token[at] === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`;
}
