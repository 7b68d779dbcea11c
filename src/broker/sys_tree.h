/* sys_tree.h - the $SYS/broker/... topics: the broker's own figures,
 * published as retained messages every sys_interval seconds under the
 * names Mosquitto uses.
 */
#ifndef SHOOTOUT_SYS_TREE_H
#define SHOOTOUT_SYS_TREE_H

struct broker;
struct broker_loop;

void sys_tree_publish(struct broker_loop *l);

#endif
