/**
 * disc_eds_no_instances and disc_endpoint_not_ready as a scrape reads them, through endpoint-only
 * changes (counted again for the changed hosts only) and service changes (counted again whole).
 */
import { metricValue } from '../support/metrics-text.js';
import { modelFromYaml, type TestModel } from '../support/model.js';
import { serviceEntryYaml } from '../support/service-entries.js';

const entry = (name: string, addresses: string[], ports = 1): string => serviceEntryYaml(name, addresses, 8080, ports);

let m: TestModel;
afterEach(() => m.stop());

const noInstances = async (): Promise<number> => metricValue(await m.metrics.registry.getSingleMetricAsString('disc_eds_no_instances'), 'disc_eds_no_instances');

describe('endpoint gauges', () => {
  it('count the ports of services without endpoints, following endpoint changes and service changes', async () => {
    m = modelFromYaml('', { mock: false });
    m.apply('se.yaml', entry('a', []) + entry('b', [], 2) + entry('c', ['10.0.0.3']));
    m.model.flush();
    expect(await noInstances()).toBe(3);
    // endpoint-only changes
    m.apply('se.yaml', entry('a', ['10.0.0.1']) + entry('b', [], 2) + entry('c', ['10.0.0.3']));
    m.model.flush();
    expect(await noInstances()).toBe(2);
    m.apply('se.yaml', entry('a', ['10.0.0.1']) + entry('b', [], 2) + entry('c', []));
    m.model.flush();
    expect(await noInstances()).toBe(3);
    m.apply('se.yaml', entry('a', ['10.0.0.1']) + entry('b', ['10.0.0.2'], 2) + entry('c', []));
    m.model.flush();
    expect(await noInstances()).toBe(1);
    // a service change (a port more) is counted whole, and endpoint changes go on from there
    m.apply('se.yaml', entry('a', ['10.0.0.1']) + entry('b', ['10.0.0.2'], 2) + entry('c', [], 3));
    m.model.flush();
    expect(await noInstances()).toBe(3);
    m.apply('se.yaml', entry('a', []) + entry('b', ['10.0.0.2'], 2) + entry('c', [], 3));
    m.model.flush();
    expect(await noInstances()).toBe(4);
  });
});
