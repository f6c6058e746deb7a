import type Koa from 'koa';
import type { IncomingMessage } from 'node:http';

import { Problem } from './errors';

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`Request body exceeds ${limit} bytes.`);
    this.name = 'BodyTooLargeError';
  }
}

/** Reads a request body as UTF-8 text, refusing more than `limit` bytes. */
export async function readText(req: IncomingMessage, limit = 1_000_000): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (size > limit) throw new BodyTooLargeError(limit);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export type Json = Record<string, unknown>;

/** A control route's JSON object body (empty when there is none); anything else is a 400 problem. */
export async function readJson(ctx: Koa.Context): Promise<Json> {
  const text = await readText(ctx.req, 64 * 1024);
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Problem(400, 'invalid_json', 'The request body is not valid JSON.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Problem(400, 'invalid_json', 'The request body must be a JSON object.');
  }
  return parsed as Json;
}

export function optionalInteger(body: Json, key: string, min: number, max: number): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new Problem(400, `invalid_${key}`, `${key} must be an integer from ${min} to ${max}.`);
  }
  return value;
}

export function optionalBoolean(body: Json, key: string): boolean | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new Problem(400, `invalid_${key}`, `${key} must be true or false.`);
  return value;
}

export function optionalChoice<T extends string>(body: Json, key: string, values: readonly T[]): T | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) {
    throw new Problem(400, `invalid_${key}`, `${key} must be one of ${values.join(', ')}.`);
  }
  return value as T;
}
