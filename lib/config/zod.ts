/**
 * The project's zod: `zod/mini` with English messages. Runtime code is bundled into every
 * function, and zod/mini tree-shakes to ~16 KB where classic zod adds ~450 KB and tens of
 * milliseconds to each cold start (bench/REPORT.md). Import it as `import * as z from
 * '…/config/zod'` (a namespace import keeps tree-shaking), never from 'zod'.
 */
import { en } from 'zod/locales';
import { config, type core } from 'zod/mini';

let english: core.$ZodErrorMap | undefined;
// The messages are built on the first issue that needs one: a cold start whose input is valid
// (most of them) never builds the locale's tables.
config({ localeError: (issue) => (english ??= en().localeError)(issue) });

export * from 'zod/mini';

/**
 * Shadows zod/mini's `z` object: importing it would keep the whole library in every bundle
 * (~420 KB), so `import { z }` type-checks to `never` and any use of it fails to compile.
 */
export const z: never = undefined as never;
