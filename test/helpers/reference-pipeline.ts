/**
 * Jest setup of every project: code under test that runs unbundled reads the app's declaration
 * from TENANG_PIPELINE, as a bundled function reads what the stack baked in. The tests' app is
 * the reference example.
 */
import { encodePipeline } from '../../lib/config';
import { referencePipeline } from '../../examples/reference/pipeline';

process.env.TENANG_PIPELINE ??= encodePipeline(referencePipeline('dev', 'us-east-1'));
