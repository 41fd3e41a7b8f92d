import * as path from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Cache } from '../../lib/infra/cache';
import { Ingress, type IngressProps } from '../../examples/reference/domain/ingress';
import type { TenangFunction } from '../../lib/infra/tenang-function';
import {
  getAtt,
  onlyResource,
  propertiesById,
  propertiesOf,
  propsErrorOf,
  ref,
  REFERENCE_APP_DIR,
  testStack,
  toText,
} from './helpers';

/** An Ingress in a fresh stack, the reader placed in an (unmanaged) cache's VPC. */
function build(overrides: Partial<IngressProps> = {}): Ingress {
  const stack = testStack();
  const cache = new Cache(stack, 'Cache', { stageName: 'dev', managed: false });
  return new Ingress(stack, 'Ingress', {
    ingressEntry: path.join(REFERENCE_APP_DIR, 'functions', 'ingress.ts'),
    readerEntry: path.join(REFERENCE_APP_DIR, 'functions', 'order-reader.ts'),
    ingressEnvironment: { ORDERS_TABLE: 'tenang-dev-orders' },
    readerEnvironment: { ORDERS_TABLE: 'tenang-dev-orders', ...cache.connectionEnvironment },
    readerVpc: cache.functionPlacement,
    ...overrides,
  });
}

describe('Class: Ingress', () => {
  let ingress: Ingress;
  let template: Template;
  beforeAll(() => {
    ingress = build();
    template = Template.fromStack(Stack.of(ingress));
  });
  /** The function a route's integration invokes. */
  const integratedFunctionOf = (routeKey: string): unknown => {
    const [, route] = onlyResource(template, 'AWS::ApiGatewayV2::Route', {
      Properties: { RouteKey: routeKey },
    });
    const integrationId = /^integrations\/\$\{(\w+)\}$/.exec(toText(route.Properties.Target))?.[1];
    if (integrationId === undefined) throw new Error(`route ${routeKey} targets no integration`);
    return propertiesById(template, integrationId).IntegrationUri;
  };
  const fnArn = (f: TenangFunction): unknown => getAtt(f.function, 'Arn');

  describe('Routes', () => {
    it.each(['POST /orders', 'POST /orders/{id}/payments', 'GET /orders/{id}'])(
      'when the API is built, route %s exists and requires IAM authorization',
      (routeKey) => {
        // Act
        const [, route] = onlyResource(template, 'AWS::ApiGatewayV2::Route', {
          Properties: { RouteKey: routeKey },
        });

        // Assess
        expect(route.Properties).toMatchObject({ ApiId: ref(ingress.api), AuthorizationType: 'AWS_IAM' });
      },
    );

    it('when the API is built, it has exactly the three routes', () => {
      // Act
      const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route')).map(
        (r) => (r.Properties as { RouteKey: string }).RouteKey,
      );

      // Assess
      expect(routes.sort()).toEqual(['GET /orders/{id}', 'POST /orders', 'POST /orders/{id}/payments']);
    });

    it.each(['POST /orders', 'POST /orders/{id}/payments'])(
      'when %s is called, it reaches the ingress function',
      (routeKey) => {
        // Act
        const uri = integratedFunctionOf(routeKey);

        // Assess
        expect(uri).toEqual(fnArn(ingress.ingress));
      },
    );

    it('when GET /orders/{id} is called, it reaches the order reader', () => {
      // Act
      const uri = integratedFunctionOf('GET /orders/{id}');

      // Assess
      expect(uri).toEqual(fnArn(ingress.reader));
    });
  });

  describe('Stage', () => {
    it('when the API is built, its $default stage auto-deploys, logs every request and throttles at 100/s with bursts of 200', () => {
      // Act
      const [, stage] = onlyResource(template, 'AWS::ApiGatewayV2::Stage', {
        Properties: { ApiId: ref(ingress.api) },
      });

      // Assess
      expect(stage.Properties).toMatchObject({
        StageName: '$default',
        AutoDeploy: true,
        DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
        AccessLogSettings: {
          DestinationArn: getAtt(ingress.node.findChild('AccessLogs'), 'Arn'),
        },
      });
      const format = JSON.parse(
        String((stage.Properties.AccessLogSettings as { Format: string }).Format),
      ) as object;
      expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status' });
    });

    it('when rate and burst limits are given, the stage throttles at those', () => {
      // Prepare
      const custom = build({ rateLimit: 20, burstLimit: 20 });

      // Act
      const t = Template.fromStack(Stack.of(custom));

      // Assess
      t.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        DefaultRouteSettings: { ThrottlingRateLimit: 20, ThrottlingBurstLimit: 20 },
      });
    });
  });

  describe('Functions', () => {
    it('when the API is built, the reader runs in the VPC and the ingress function does not', () => {
      // Act
      const reader = propertiesOf(template, ingress.reader.function);
      const writer = propertiesOf(template, ingress.ingress.function);

      // Assess
      expect(reader.VpcConfig).toBeDefined();
      expect(writer.VpcConfig).toBeUndefined();
      expect(reader.FunctionName).toBe('Test-order-reader');
      expect(writer.FunctionName).toBe('Test-ingress');
    });

    it('when the API is built, API Gateway may invoke each function', () => {
      // Act
      const permissions = Object.values(template.findResources('AWS::Lambda::Permission')).map(
        (p) => p.Properties as { FunctionName: unknown; Principal: string },
      );

      // Assess
      for (const f of [ingress.ingress, ingress.reader]) {
        expect(permissions).toContainEqual(
          expect.objectContaining({ FunctionName: fnArn(f), Principal: 'apigateway.amazonaws.com' }),
        );
      }
    });
  });

  describe('Validation', () => {
    it('when the burst limit is below the rate limit, it fails', () => {
      // Act
      const error = propsErrorOf(() => build({ rateLimit: 100, burstLimit: 50 }));

      // Assess
      expect(error.message).toMatch(/^Invalid props for Ingress/);
      expect(error.problems).toEqual(['burstLimit must be ≥ rateLimit > 0']);
    });

    it('when the rate limit is not positive, it fails', () => {
      // Act
      const error = propsErrorOf(() => build({ rateLimit: 0 }));

      // Assess
      expect(error.problems).toEqual(['burstLimit must be ≥ rateLimit > 0']);
    });

    it('when both environments and the limits are invalid, it lists the three problems in one ConstructPropsError', () => {
      // Act
      const error = propsErrorOf(() =>
        build({ ingressEnvironment: { API_KEY: 'x' }, readerEnvironment: { cacheHost: 'y' }, burstLimit: 1 }),
      );

      // Assess
      expect(error.problems).toHaveLength(3);
    });
  });
});
