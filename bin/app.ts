#!/usr/bin/env node
/** CDK entry point: `npx cdk synth`, `npx cdk deploy [-c tenang:stage=dev] [-c tenang:target=emulator]`. */
import { App } from 'aws-cdk-lib';
import { buildApp, DEFAULT_REGION } from '../lib/infra/app';

const app = new App();
buildApp(app, process.env.CDK_DEFAULT_REGION ?? process.env.AWS_REGION ?? DEFAULT_REGION);
app.synth();
