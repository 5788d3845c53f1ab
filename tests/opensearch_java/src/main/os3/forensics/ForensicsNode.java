package forensics;

import java.util.Collection;
import java.util.Collections;
import java.util.stream.Collectors;

import org.opensearch.Version;
import org.opensearch.env.Environment;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.PluginInfo;

/**
 * A Node with plugins from the classpath, OpenSearch 3.x: Node's constructor takes
 * PluginInfo, made here as the 3.x test framework's MockNode makes it.
 */
final class ForensicsNode extends Node {
    ForensicsNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
        super(environment, infos(plugins), true);
    }

    private static Collection<PluginInfo> infos(Collection<Class<? extends Plugin>> plugins) {
        return plugins.stream()
            .map(p -> new PluginInfo(p.getName(), "classpath plugin", "NA", Version.CURRENT, "1.8",
                p.getName(), null, Collections.emptyList(), false))
            .collect(Collectors.toList());
    }
}
