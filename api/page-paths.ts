// Which requests are the buyer's HTML pages: their errors are answered as pages in words
// (api/page-errors.ts), their reads count against the page limit (api/rate-limits.ts), and their
// forms are read by the page routes, not as JSON bodies (api/app.ts).

/**
 * The paths of the buyer's HTML pages (GET and their forms), matched as the routers match them: in
 * any case, with or without a trailing slash.
 */
const PAGE_PATH = /^\/(?:$|p\/|purchases(?:\/|$)|queue\/|checkout\/return\/|sign-in\/?$|sign-out\/?$)/i;

export const isPagePath = (path: string): boolean => PAGE_PATH.test(path);
