/**
 * `tenang/zod`: zod/mini with English messages, as tenang's own schemas use it. Import it as a
 * namespace (`import * as z from 'tenang/zod'`): bundlers then keep only the builders a function
 * uses (~16 KB), where a namespace re-exported by another entry (`z` of `tenang/runtime`) keeps
 * all of zod/mini and its locales in every bundle (~420 KB).
 */
export * from '../config/zod';
