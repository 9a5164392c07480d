/**
 * The examples each command's help ends with (help.ts attaches them), for the three programs.
 * Every example must run as written against a cluster with the mesh installed; test/cli/help.test.ts
 * parses each one with the real program, so a renamed flag or command fails there.
 */
import type { Example, ExampleTable } from './help.js';

const ex = (note: string, command: string): Example => ({ note, command });

/** `<program> completion …` examples, the same for every program. */
function completionExamples(prog: string): ExampleTable {
  return {
    completion: [
      ex('Load completion for bash into the current shell', `source <(${prog} completion bash)`),
      ex('Install completion for zsh', `${prog} completion zsh > "\${fpath[1]}/_${prog}"`),
      ex('Load completion for fish', `${prog} completion fish | source`),
    ],
    'completion bash': [
      ex('Load completion into the current shell (needs the bash-completion package)', `source <(${prog} completion bash)`),
      ex('Install it for every new shell', `${prog} completion bash > /etc/bash_completion.d/${prog}`),
    ],
    'completion fish': [
      ex('Load completion into the current shell', `${prog} completion fish | source`),
      ex('Install it for every new shell', `${prog} completion fish > ~/.config/fish/completions/${prog}.fish`),
    ],
    'completion powershell': [
      ex('Load completion into the current session', `${prog} completion powershell | Out-String | Invoke-Expression`),
      ex('Load it in every session from your profile', `${prog} completion powershell >> $PROFILE`),
    ],
    'completion zsh': [
      ex('Load completion into the current shell (needs compinit)', `source <(${prog} completion zsh)`),
      ex('Install it without descriptions', `${prog} completion zsh --no-descriptions > "\${fpath[1]}/_${prog}"`),
    ],
  };
}

const tagExamples = (prefix: string): ExampleTable => ({
  [`${prefix}generate`]: [ex('Print the webhook configuration of tag prod pointing at revision canary', `meshctl ${prefix.replace('experimental', 'x')}generate prod -r canary > prod-tag.yaml`)],
  [`${prefix}list`]: [ex('List tags, their revisions and the namespaces that use them', `meshctl ${prefix.replace('experimental', 'x')}list`)],
  [`${prefix}remove`]: [ex('Remove tag prod although namespaces still use it', `meshctl ${prefix.replace('experimental', 'x')}remove prod -y`)],
  [`${prefix}set`]: [
    ex('Create tag prod for revision canary', `meshctl ${prefix.replace('experimental', 'x')}set prod -r canary`),
    ex('Point the existing tag prod at revision stable', `meshctl ${prefix.replace('experimental', 'x')}set prod -r stable --overwrite`),
  ],
});

export const MESHCTL_EXAMPLES: ExampleTable = {
  '': [
    ex('Install the demo profile, then check it', 'meshctl install -y --set profile=demo && meshctl verify-install'),
    ex('Analyze the mesh configuration of every namespace', 'meshctl analyze -A'),
  ],
  analyze: [
    ex('Analyze the live cluster (the namespace of -n, else default)', 'meshctl analyze -n shop'),
    ex('Analyze every namespace, showing errors only', 'meshctl analyze -A --output-threshold Error'),
    ex('Try a change before applying it: the file is laid over the cluster', 'meshctl analyze -n shop reviews-route.yaml'),
    ex('Analyze a folder of files alone, without a cluster', 'meshctl analyze --use-cluster=false -R config/'),
    ex('Report as JSON, leaving out one finding', 'meshctl analyze -A -o json -S "MESH0102=VirtualService reviews-route.shop"'),
    ex('List the analyzers and the codes they report', 'meshctl analyze -L'),
  ],
  admin: [ex('List the log scopes of every meshd and their levels', 'meshctl admin log')],
  'admin log': [
    ex('List the log scopes of every meshd and their levels', 'meshctl admin log'),
    ex('Turn on debug logs of the ADS server in one meshd pod', 'meshctl admin log meshd-7d9f8c6b5-x2k4p --level ads:debug'),
    ex('Log stack traces from errors of the model scope, in every meshd of revision canary', 'meshctl admin log -l app=meshd,mesh.io/rev=canary --stack-trace-level model:error'),
    ex('Put every scope back to info, and show the result as JSON', 'meshctl admin log --reset -o json'),
  ],
  ...completionExamples('meshctl'),
  dashboard: [ex('Open the ControlZ page of a meshd pod', 'meshctl dashboard controlz deployment/meshd')],
  'dashboard controlz': [
    ex('Open the ControlZ page of a meshd pod of the mesh namespace', 'meshctl dashboard controlz deployment/meshd'),
    ex('Print the URL only, on a fixed local port', 'meshctl dashboard controlz meshd-7d9f8c6b5-x2k4p -p 9876 --browser=false'),
    ex('The first meshd pod of revision canary', 'meshctl d controlz -l app=meshd,mesh.io/rev=canary'),
  ],
  'dashboard proxy': [
    ex('Open the admin UI of a proxy', 'meshctl dashboard proxy reviews-v1-5c7b8d.shop'),
    ex('The first proxy of app reviews, listening on every address', 'meshctl dashboard proxy -n shop -l app=reviews --address 0.0.0.0'),
  ],
  'dashboard viz': [ex('Open the visualization dashboard of the mesh namespace', 'meshctl dashboard viz'), ex('Print its URL on local port 3000', 'meshctl dashboard viz -p 3000 --browser=false')],
  'dashboard topology': [ex('Open the topology dashboard', 'meshctl dashboard topology'), ex('The one installed in namespace monitoring', 'meshctl d topology -n monitoring')],
  'dashboard metrics': [ex('Open the metrics store dashboard', 'meshctl dashboard metrics'), ex('Print its URL, listening on IPv4 only', 'meshctl dashboard metrics --address 127.0.0.1 --browser=false')],
  'dashboard trace-a': [ex('Open the tracing dashboard', 'meshctl dashboard trace-a')],
  'dashboard trace-b': [ex('Open the tracing dashboard showing the mesh dashboard', 'meshctl dashboard trace-b')],
  'dashboard trace-c': [ex('Open the tracing dashboard', 'meshctl dashboard trace-c'), ex('Print its URL on a fixed local port', 'meshctl dash trace-c -p 9411 --browser=false')],
  experimental: [
    ex('Check that the cluster meets the installation requirements', 'meshctl x precheck'),
    ex('List the installed revisions', 'meshctl x revision list'),
  ],
  'experimental add-to-mesh': [ex('Restart the pods of Deployment reviews-v1 with the sidecar', 'meshctl x add-to-mesh deployment reviews-v1 -n shop')],
  'experimental add-to-mesh deployment': [
    ex('Restart the pods of Deployment reviews-v1 with the sidecar', 'meshctl x add-to-mesh deployment reviews-v1 -n shop'),
    ex('With the sidecar of revision canary', 'meshctl x add dep reviews-v1 -n shop -r canary'),
  ],
  'experimental add-to-mesh service': [ex('Restart the pods of every Deployment Service reviews selects with the sidecar', 'meshctl x add-to-mesh service reviews -n shop')],
  'experimental add-to-mesh external-service': [
    ex('A database on two VMs, as Service vmdb of namespace shop', 'meshctl x add-to-mesh external-service vmdb 10.0.0.5,10.0.0.6 tcp-db:5432 -n shop -s db-sa'),
    ex('An HTTP service on one VM, labelled', 'meshctl x add es legacy 10.0.0.9 http:8080 -l app=legacy -n shop'),
  ],
  'experimental remove-from-mesh': [ex('Restart the pods of Deployment reviews-v1 without the sidecar', 'meshctl x remove-from-mesh deployment reviews-v1 -n shop')],
  'experimental remove-from-mesh deployment': [ex('Restart the pods of Deployment reviews-v1 without the sidecar', 'meshctl x remove-from-mesh deployment reviews-v1 -n shop')],
  'experimental remove-from-mesh service': [ex('Restart the pods of the Deployments Service reviews selects without the sidecar', 'meshctl x rm svc reviews -n shop')],
  'experimental remove-from-mesh external-service': [ex('Remove the ServiceEntry and Service of external service vmdb', 'meshctl x remove-from-mesh external-service vmdb -n shop')],
  'experimental workload': [ex('Print a WorkloadGroup for VMs of app ratings', 'meshctl x workload group create --name ratings-vm -n shop -l app=ratings -p http=8080 -s ratings')],
  'experimental workload group': [ex('Print a WorkloadGroup for VMs of app ratings', 'meshctl x workload group create --name ratings-vm -n shop -l app=ratings -p http=8080 -s ratings')],
  'experimental workload group create': [
    ex('Print a WorkloadGroup for VMs of app ratings', 'meshctl x workload group create --name ratings-vm -n shop -l app=ratings -p http=8080 -s ratings'),
    ex('Apply it at once', 'meshctl x workload group create --name ratings-vm -n shop -l app=ratings,version=v3 | kubectl apply -f -'),
  ],
  'experimental workload entry': [ex('Write the files of a VM of WorkloadGroup ratings-vm to ./vm', 'meshctl x workload entry configure --name ratings-vm -n shop -o vm')],
  'experimental workload entry configure': [
    ex('Write the files of a VM of WorkloadGroup ratings-vm to ./vm', 'meshctl x workload entry configure --name ratings-vm -n shop -o vm'),
    ex('From a group file, for a VM that registers itself and captures DNS, through a gateway at 203.0.113.10', 'meshctl x workload entry configure -f group.yaml -o vm --autoregister --capture-dns --ingressIP 203.0.113.10'),
    ex('For revision canary, with a day-long token', 'meshctl x workload entry configure --name ratings-vm -n shop -o vm -r canary --tokenDuration 86400'),
  ],
  'experimental config': [ex('List meshctl\'s settings and where each comes from', 'meshctl x config list')],
  'experimental config list': [
    ex('List meshctl\'s settings and where each comes from', 'meshctl x config list'),
    ex('The same as JSON', 'meshctl x config list -o json'),
  ],
  'experimental create-remote-secret': [
    ex('Let the meshd of cluster east read this cluster (apply the Secret there)', 'meshctl x create-remote-secret --name west --create-service-account | kubectl apply -f - --context=east'),
    ex('Give the API server address the other cluster reaches', 'meshctl x create-remote-secret --name west --server https://west.example:6443'),
  ],
  'experimental internal-debug': [
    ex('The sync state of every proxy, from one meshd', 'meshctl x internal-debug syncz'),
    ex('The same from every meshd replica', 'meshctl x internal-debug syncz --all'),
    ex('What meshd holds for one proxy, in the shape of a proxy\'s config dump', "meshctl x internal-debug 'config_dump?proxyID=reviews-v1-5c7b8d.shop&format=envoy'"),
    ex('Ask one meshd directly over plain-text xDS (a port-forward to 15010)', 'meshctl x internal-debug version --xds-address localhost:15010 --plaintext'),
  ],
  'experimental metrics': [
    ex('Request rate, error rate and latency of workload reviews-v1 of namespace shop', 'meshctl x metrics reviews-v1.shop'),
    ex('Several workloads of namespace shop', 'meshctl x m -n shop reviews-v1 reviews-v2 ratings-v1'),
  ],
  'experimental proxy-status': [
    ex('The sync state of every proxy, from every meshd', 'meshctl x proxy-status'),
    ex('Compare what meshd would send a proxy with what it holds', 'meshctl x proxy-status reviews-v1-5c7b8d.shop'),
    ex('Ask meshd with the mesh\'s certificates, without the API server', 'meshctl x proxy-status --xds-address meshd.mesh-system.svc:15012 --cert-dir ./certs'),
  ],
  'experimental version': [
    ex('The client version and the version of every meshd', 'meshctl x version'),
    ex('The client version only, as JSON', 'meshctl x version --remote=false -o json'),
  ],
  'experimental authz': [ex('Show the authorization a proxy enforces', 'meshctl x authz check reviews-v1-5d8f7.shop')],
  'experimental authz check': [
    ex('Show the policies the proxy of a pod enforces, per chain', 'meshctl x authz check reviews-v1-5d8f7.shop'),
    ex('Read a saved config dump instead of the proxy', 'meshctl x authz check -f reviews-config-dump.json'),
  ],
  'experimental describe': [ex('Describe what applies to a pod and where its traffic goes', 'meshctl x describe pod reviews-v1-5d8f7.shop')],
  'experimental describe pod': [
    ex('Describe the routes, subsets, TLS and policies that apply to a pod', 'meshctl x describe pod reviews-v1-5d8f7 -n shop'),
    ex('Describe the first pod of a deployment', 'meshctl x des pod deployment/reviews-v1.shop'),
  ],
  'experimental describe service': [ex('Describe a service, its pods and the configuration that applies', 'meshctl x des svc reviews.shop')],
  'experimental wait': [
    ex('Wait until every proxy that needs it holds the latest VirtualService reviews', 'meshctl x wait vs reviews.shop'),
    ex('Wait up to two minutes for 90 % of the proxies to hold generation 4 of a DestinationRule', 'meshctl x wait dr reviews.shop --generation 4 --threshold 0.9 --timeout 2m'),
    ex('Wait until the proxies no longer hold a deleted Gateway', 'meshctl x wait gw public.mesh-system --for delete'),
  ],
  'cluster-inject': [
    ex('Inject a Deployment with the cluster\'s injector settings and apply it', 'meshctl cluster-inject -f deployment.yaml | kubectl apply -f -'),
    ex('Inject offline, with the settings saved to files', 'meshctl cluster-inject -f app.yaml --injectConfigFile inject-config.yaml --meshConfigFile mesh.yaml --valuesFile values.json -o app-injected.yaml'),
    ex('Inject with the settings of revision canary', 'kubectl get deployment web -o yaml | meshctl cluster-inject -f - --revision canary'),
  ],
  'experimental cluster-uninject': [ex('Remove the sidecar from an injected file', 'meshctl x cluster-uninject -f app-injected.yaml -o app.yaml')],
  'experimental injector': [ex('List the injectors\' namespaces and pods', 'meshctl x injector list')],
  'experimental injector list': [
    ex('Namespaces selected for injection, their revision and pods', 'meshctl x injector list'),
    ex('The same as JSON', 'meshctl x injector list -o json'),
  ],
  'experimental precheck': [
    ex('Check the cluster before installing', 'meshctl x precheck'),
    ex('Check it for a second control plane of revision canary', 'meshctl x precheck -r canary'),
  ],
  'experimental revision': [ex('List revisions with their versions', 'meshctl x revision list -v')],
  'experimental revision list': [
    ex('List control-plane and gateway revisions with their tags', 'meshctl x revision list'),
    ex('The same as JSON', 'meshctl x revision list -o json'),
  ],
  'experimental revision describe': [
    ex('Describe the default revision', 'meshctl x revision describe default'),
    ex('Describe revision canary with the pods that use it, as JSON', 'meshctl x revision describe canary -v -o json'),
  ],
  'experimental revision tag': [ex('List revision tags', 'meshctl x revision tag list')],
  ...tagExamples('experimental revision tag '),
  'experimental uninstall': [
    ex('Remove revision canary', 'meshctl x uninstall -r canary'),
    ex('Show what removing an installation would delete', 'meshctl x uninstall --dry-run -f my-mesh.yaml'),
    ex('Remove every revision and the CRDs, without asking', 'meshctl x uninstall --purge -y'),
  ],
  install: [
    ex('Install the default profile without asking', 'meshctl install -y'),
    ex('Install the demo profile', 'meshctl install -y --set profile=demo'),
    ex('Install revision canary from a MeshOperator file and verify it', 'meshctl install -f my-mesh.yaml -r canary --verify -y'),
    ex('Show what would change, changing nothing', 'meshctl install --dry-run --set profile=demo'),
  ],
  manifest: [ex('Write the install manifest of the demo profile to a file', 'meshctl manifest generate --set profile=demo > mesh.yaml')],
  'manifest generate': [
    ex('Print the install manifest of the default profile', 'meshctl manifest generate > mesh.yaml'),
    ex('Write one file per component to out/', 'meshctl manifest generate --set profile=demo -o out/'),
    ex('Only the daemon, for revision canary', 'meshctl manifest generate --component Meshd -r canary'),
  ],
  'manifest diff': [
    ex('Compare two manifests', 'meshctl manifest diff mesh-old.yaml mesh-new.yaml'),
    ex('Compare two folders, Deployments only', 'meshctl manifest diff -r old/ new/ --select "Deployment:*:*"'),
  ],
  'manifest install': [ex('Install the demo profile (the same as meshctl install)', 'meshctl manifest install -y --set profile=demo')],
  operator: [ex('Install the operator controller', 'meshctl operator init')],
  'operator dump': [
    ex('Write the operator controller manifest to a file', 'meshctl operator dump > operator.yaml'),
    ex('Use an image from your own registry', 'meshctl operator dump --hub registry.example/mesh --tag 0.1.0'),
  ],
  'operator init': [
    ex('Install the operator controller', 'meshctl operator init'),
    ex('Install it and hand it a MeshOperator to reconcile', 'meshctl operator init -f my-mesh.yaml --watchedNamespaces mesh-system'),
  ],
  'operator remove': [
    ex('Remove the operator controller', 'meshctl operator remove'),
    ex('Remove it although MeshOperator resources remain', 'meshctl operator remove --force'),
  ],
  'proxy-config': [ex('The clusters of one proxy', 'meshctl proxy-config cluster reviews-v1-5c7b8d.shop')],
  'proxy-config all': [
    ex('Clusters, listeners, routes and endpoints of a proxy', 'meshctl proxy-config all reviews-v1-5c7b8d.shop'),
    ex('The same from a saved config dump, as JSON', 'meshctl proxy-config all -f config_dump.json -o json'),
  ],
  'proxy-config bootstrap': [ex('The node a proxy announced to meshd', 'meshctl proxy-config bootstrap deployment/reviews-v1.shop')],
  'proxy-config cluster': [
    ex('The clusters of a proxy', 'meshctl proxy-config cluster reviews-v1-5c7b8d.shop'),
    ex('Outbound clusters of one service on port 9080', 'meshctl proxy-config cluster reviews-v1-5c7b8d.shop --fqdn ratings.shop.svc.cluster.local --port 9080 --direction outbound'),
  ],
  'proxy-config endpoint': [
    ex('The endpoints of a proxy', 'meshctl proxy-config endpoint reviews-v1-5c7b8d.shop'),
    ex('Unhealthy endpoints of one cluster', 'meshctl proxy-config endpoint reviews-v1-5c7b8d.shop --cluster "outbound|9080||ratings.shop.svc.cluster.local" --status UNHEALTHY'),
  ],
  'proxy-config listener': [
    ex('The listeners of a proxy', 'meshctl proxy-config listener reviews-v1-5c7b8d.shop'),
    ex('HTTP listeners on port 9080, with their names', 'meshctl proxy-config listener reviews-v1-5c7b8d.shop --port 9080 --type HTTP --verbose'),
  ],
  'proxy-config log': [
    ex('The log levels of a proxy', 'meshctl proxy-config log reviews-v1-5c7b8d.shop'),
    ex('Debug logs of the connection manager in every proxy of app reviews', 'meshctl proxy-config log -n shop -l app=reviews --level http:debug'),
    ex('Put every logger back to warning', 'meshctl proxy-config log reviews-v1-5c7b8d.shop --reset'),
  ],
  'proxy-config route': [
    ex('The routes of a proxy', 'meshctl proxy-config route reviews-v1-5c7b8d.shop'),
    ex('One route configuration, with its matches', 'meshctl proxy-config route reviews-v1-5c7b8d.shop --name 9080 --verbose'),
  ],
  'proxy-config secret': [ex('The certificates a gateway serves (never its private keys)', 'meshctl proxy-config secret deployment/mesh-ingressgateway.mesh-system')],
  authz: [ex('The command lives under experimental', 'meshctl x authz check reviews-v1-5d8f7.shop')],
  'bug-report': [
    ex('Capture everything into ./bug-report.tar.gz', 'meshctl bug-report'),
    ex('Only the last hour of the proxy logs of namespace shop, into /tmp', 'meshctl bug-report --include shop --duration 1h --dir /tmp'),
    ex('Leave out the proxies of deployment legacy and rank logs with "upstream reset" first', 'meshctl bug-report --exclude "shop/legacy" --critical-errs "upstream reset"'),
    ex('Show what would be collected', 'meshctl bug-report --dry-run'),
  ],
  'bug-report version': [ex('Print the version as JSON', 'meshctl bug-report version -o json')],
  'proxy-status': [
    ex('The sync state of every proxy, from every meshd', 'meshctl proxy-status'),
    ex('Compare what meshd would send a proxy with what it holds', 'meshctl proxy-status reviews-v1-5c7b8d.shop'),
    ex('Compare with a config dump saved earlier', 'meshctl proxy-status reviews-v1-5c7b8d.shop -f config_dump.json'),
  ],
  options: [ex('Show the global flags, the variables and the settings in effect', 'meshctl options')],
  profile: [ex('List the profiles', 'meshctl profile list')],
  'profile list': [ex('List the built-in profiles', 'meshctl profile list')],
  'profile dump': [
    ex('Print the demo profile', 'meshctl profile dump demo'),
    ex('Print the daemon part of the default profile as JSON', 'meshctl profile dump -p components.meshd -o json'),
    ex('Print the --set flags that rebuild a profile', 'meshctl profile dump -o flags demo'),
  ],
  'profile diff': [
    ex('Show what the demo profile changes', 'meshctl profile diff default demo'),
    ex('Compare a profile with your MeshOperator file', 'meshctl profile diff default my-mesh.yaml'),
  ],
  tag: [ex('Create tag prod for revision canary (namespaces labelled mesh.io/rev=prod follow it), then list tags', 'meshctl tag set prod -r canary && meshctl tag list')],
  ...tagExamples('tag '),
  upgrade: [
    ex('Upgrade the control plane in place without asking', 'meshctl upgrade -y'),
    ex('Show what an upgrade to your MeshOperator file would change', 'meshctl upgrade --dry-run -f my-mesh.yaml'),
  ],
  validate: [
    ex('Validate one file', 'meshctl validate -f reviews-route.yaml'),
    ex('Validate a folder, with the references between its files', 'meshctl validate -f config/ -x'),
    ex('Validate what the cluster holds', 'kubectl get virtualservices -A -o yaml | meshctl validate -f -'),
  ],
  'verify-install': [
    ex('Verify the installed control plane', 'meshctl verify-install'),
    ex('Verify revision canary', 'meshctl verify-install -r canary'),
    ex('Verify against a MeshOperator file', 'meshctl verify-install -f my-mesh.yaml'),
  ],
  version: [
    ex('Print the client and control-plane versions', 'meshctl version'),
    ex('Print the client version alone', 'meshctl version --short --remote=false'),
    ex('Print everything as JSON', 'meshctl version -o json'),
  ],
};

export const DISCOVERY_EXAMPLES: ExampleTable = {
  '': [ex('Serve the example config with the Mock registry', 'mesh-discovery discovery --registries Mock --configDir examples/config')],
  discovery: [
    ex('Run against a cluster (the default Cluster registry)', 'mesh-discovery discovery --clusterconfig ~/.kube/config'),
    ex(
      'Serve config files with the Mock registry on loopback only',
      'mesh-discovery discovery --registries Mock --configDir examples/config --grpcAddr 127.0.0.1:15010 --httpAddr 127.0.0.1:8080 --monitoringAddr 127.0.0.1:15014',
    ),
    ex('Debug logs of the xDS server, delta xDS on', 'MESH_DELTA_XDS=true mesh-discovery discovery --log_output_level default:info,ads:debug'),
  ],
  request: [
    ex('Sync state of every connected proxy', 'mesh-discovery request GET /debug/syncz'),
    ex('The metrics', 'mesh-discovery request GET /metrics'),
  ],
  version: [ex('Print the build information as YAML', 'mesh-discovery version -o yaml')],
  ...completionExamples('mesh-discovery'),
  help: [ex('Show the flags and variables of the daemon', 'mesh-discovery help discovery')],
};

export const OPERATOR_EXAMPLES: ExampleTable = {
  '': [ex('Run the controller against your cluster', 'mesh-operator server --clusterconfig ~/.kube/config')],
  server: [
    ex('Run the controller as a local process', 'mesh-operator server --watchedNamespaces mesh-system --clusterconfig ~/.kube/config --operatorNamespace mesh-operator'),
    ex('One replica only, without leader election or metrics', 'mesh-operator server --leaderElect=false --monitoringAddr ""'),
  ],
  version: [ex('Print the version alone', 'mesh-operator version --short')],
};

export const AGENT_EXAMPLES: ExampleTable = {
  '': [ex('Run the proxy of an injected pod (what the sidecar template runs)', 'mesh-agent proxy sidecar --domain shop.svc.cluster.local')],
  proxy: [
    ex('Run a sidecar proxy', 'mesh-agent proxy sidecar --domain shop.svc.cluster.local --proxyLogLevel=warning --log_output_level=default:info'),
    ex('Run as a local process against meshd on this machine', 'mesh-agent proxy sidecar --envoyBinary ./envoy --tokenPath ./token --rootCertPath ./root-cert.pem --sdsSocket ./sds.sock --configDir ./proxy --xdsServerName meshd.mesh-system.svc'),
  ],
  'grpc-bootstrap': [ex('Write the bootstrap of a proxyless gRPC application', 'mesh-agent grpc-bootstrap --xds-address meshd.mesh-system.svc:15010 --out /var/lib/grpc/data/bootstrap.json --domain shop.svc.cluster.local')],
  capture: [
    ex('The rules the injector\'s mesh-init step writes, printed', 'mesh-agent capture -p 15001 -z 15006 -u 1337 -g 1337 -m REDIRECT -i "*" -x "" -b "*" -d 15020,15021,15090 --dry-run'),
    ex('Capture only 10.0.0.0/8, leave port 5432 out, IPv4 and IPv6', 'mesh-agent capture -i 10.0.0.0/8,fd00::/8 -o 5432 --ipv6'),
  ],
  version: [ex('Print the version alone', 'mesh-agent version --short')],
};
