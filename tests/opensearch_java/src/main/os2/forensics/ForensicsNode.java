package forensics;

import java.util.Collection;

import org.opensearch.env.Environment;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;

/** A Node with plugins from the classpath, OpenSearch 2.x: Node's constructor takes the classes. */
final class ForensicsNode extends Node {
    ForensicsNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
        super(environment, plugins, true);
    }
}
